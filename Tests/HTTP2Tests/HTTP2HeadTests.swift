import HTTP1
@testable import HTTP2
import XCTest

/// `HTTP2Head` built field by field and written in one pass into storage sized once.
final class HTTP2HeadTests: XCTestCase {
    func testAHeadWrittenInOnePassEqualsOneAppendedFieldByField() {
        let fields: [(String, String)] = [("content-type", "application/grpc"), ("x-empty", ""), ("authorization", "Bearer abc"),
                                          ("te", "trailers")]
        let appended = HTTP2Head(method: "POST", scheme: "https", authority: "api.test", path: "/svc/Call",
                                 fields: HTTPFields(fields.map { HTTPField(name: $0.0, value: $0.1) }))
        // Room for more than is written: what is kept is what was written.
        let written = HTTP2Head(method: "POST", scheme: "https", authority: "api.test", path: "/svc/Call",
                                fields: fields.count + 3, bytes: 200) { out in
            for (name, value) in fields {
                Array(name.utf8).withUnsafeBytes { n in Array(value.utf8).withUnsafeBytes { out.add(name: n, value: $0) } }
            }
        }
        XCTAssertEqual(written, appended)
        XCTAssertEqual(written.fieldCount, 4)
        XCTAssertEqual(written.fieldByteCount, fields.reduce(0) { $0 + $1.0.utf8.count + $1.1.utf8.count })
        XCTAssertEqual(written.firstField("authorization"), "Bearer abc")
        let empty = HTTP2Head(method: "GET", scheme: "http", authority: "a", path: "/", fields: 0, bytes: 0) { _ in }
        XCTAssertEqual(empty, HTTP2Head(method: "GET", scheme: "http", authority: "a", path: "/"))
    }
}
