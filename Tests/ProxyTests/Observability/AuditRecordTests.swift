import Foundation
import XCTest
@testable import Proxy

/// An audit record is one JSON line with every key present (null when absent), strings escaped.
final class AuditRecordTests: XCTestCase {
    func testOneLineWithEveryKeyAndEscapedStrings() throws {
        let record = AuditRecord(route: "api.test:80", credential: "partner", placement: nil, method: "GET", authority: "api.test",
                                 path: "/v1/\"quoted\"\\n", rule: "read", decision: .allowed, reason: nil, status: 200,
                                 bytesIn: 3, bytesOut: 42, traceID: nil, protocolName: "HTTP/2")
        let line = record.line()
        XCTAssertEqual(line.last, 0x0a)
        XCTAssertEqual(line.filter { $0 == 0x0a }.count, 1, "one line")
        let object = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(line)) as? [String: Any])
        XCTAssertEqual(Set(object.keys), ["time", "route", "credential", "placement", "method", "authority", "path", "rule", "decision",
                                          "reason", "status", "bytes_in", "bytes_out", "trace_id", "protocol"])
        XCTAssertEqual(object["path"] as? String, "/v1/\"quoted\"\\n")
        XCTAssertTrue(object["placement"] is NSNull)
        XCTAssertEqual(object["bytes_out"] as? Int, 42)
        XCTAssertEqual(object["decision"] as? String, "allowed")
        let time = try XCTUnwrap(object["time"] as? String)
        XCTAssertEqual(time.count, 24, time)
        XCTAssertTrue(time.hasSuffix("Z"))
    }
}
