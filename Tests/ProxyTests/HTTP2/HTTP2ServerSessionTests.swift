import HTTP1
import HTTP2
@testable import Proxy
import XCTest

/// What the app's HTTP/2 connection decides from a request head alone, without sockets.
final class HTTP2ServerSessionTests: XCTestCase {
    private func head(contentType: String?) -> HTTP2Head {
        HTTP2Head(method: "POST", scheme: "http", authority: "api.test", path: "/svc/Call",
                  fields: HTTPFields(contentType.map { [HTTPField(name: "content-type", value: $0)] } ?? []))
    }

    func testAGRPCCallIsKnownByItsContentTypeInAnyCaseButNotGRPCWeb() {
        for type in ["application/grpc", "application/grpc+proto", "Application/GRPC+json", "application/grpc;charset=utf-8"] {
            XCTAssertTrue(HTTP2ServerSession.isGRPC(head(contentType: type)), type)
        }
        for type in ["application/grpc-web", "application/grpc-web+proto", "application/json", "text/plain", "", "application/grp"] {
            XCTAssertFalse(HTTP2ServerSession.isGRPC(head(contentType: type)), type)
        }
        XCTAssertFalse(HTTP2ServerSession.isGRPC(head(contentType: nil)))
    }
}
