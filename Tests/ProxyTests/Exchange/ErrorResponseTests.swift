import Foundation
import XCTest

@testable import Proxy

/// Proxy-generated errors as HTTP/1.1 clients and gRPC calls see them.
final class ErrorResponseTests: XCTestCase {
    private func text(_ bytes: [UInt8]) -> String { String(decoding: bytes, as: UTF8.self) }

    func testErrorResponseHasProxyStatusJSONAndLength() {
        let error = ProxyError(status: 403, type: "http_request_denied", message: "no \"route\" for x")
        let text = String(decoding: ErrorResponse.bytes(for: error, close: true, retryAfter: 2), as: UTF8.self)
        let parts = text.components(separatedBy: "\r\n\r\n")
        XCTAssertTrue(parts[0].hasPrefix("HTTP/1.1 403 Forbidden\r\n"))
        XCTAssertTrue(parts[0].contains("Proxy-Status: token-sidecar; error=http_request_denied; details=\"no \\\"route\\\" for x\""))
        XCTAssertTrue(parts[0].contains("Connection: close"))
        XCTAssertTrue(parts[0].contains("Retry-After: 2"))
        XCTAssertTrue(parts[0].contains("Content-Length: \(parts[1].utf8.count)"))
        let json = try? JSONSerialization.jsonObject(with: Data(parts[1].utf8)) as? [String: String]
        XCTAssertEqual(json?["error"], "http_request_denied")
        XCTAssertEqual(json?["message"], "no \"route\" for x")
    }

    func testAGRPCCallGetsATrailersOnlyStatusAPersonCanRead() {
        let error = ProxyError(status: 504, type: "connection_timeout", message: "could not connect in 5s; 100% sure")
        let response = text(ErrorResponse.bytes(for: error, close: false, grpc: true))
        XCTAssertEqual(response, """
            HTTP/1.1 200 OK\r
            content-type: application/grpc\r
            grpc-status: 4\r
            grpc-message: could not connect in 5s; 100%25 sure\r
            proxy-status: token-sidecar; error=connection_timeout; details="could not connect in 5s; 100% sure"\r
            content-length: 0\r
            \r

            """)
    }

    func testGRPCStatusesFollowGRPCsHTTPMapping() {
        let cases: [(Int, Int)] = [(401, 16), (403, 7), (421, 7), (404, 12), (501, 12), (408, 4), (504, 4), (413, 8), (431, 8),
                                   (429, 8), (502, 14), (503, 14), (400, 13), (500, 2)]
        for (status, expected) in cases {
            XCTAssertEqual(ErrorResponse.grpcStatus(for: ProxyError(status: status, type: "t", message: "m")), expected, "\(status)")
        }
        XCTAssertEqual(ErrorResponse.percentEncoded("é\n%"), "%C3%A9%0A%25")
    }
}
