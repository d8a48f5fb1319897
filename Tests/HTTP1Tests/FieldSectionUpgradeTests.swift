import HTTP1
import XCTest

/// ``FieldSectionView/upgradeProtocol()``: the protocol a request asks to switch to, only with
/// `upgrade` among its Connection options (RFC 9110 §7.8).
final class FieldSectionUpgradeTests: XCTestCase {
    private func upgrade(_ fields: String) throws -> String? {
        try parseRequest("GET /ws HTTP/1.1\r\nHost: a.test\r\n\(fields)\r\n").withFieldSection { $0.upgradeProtocol() }
    }

    func testTheFirstProtocolLowercaseWithoutItsVersion() throws {
        XCTAssertEqual(try upgrade("Connection: Upgrade\r\nUpgrade: websocket\r\n"), "websocket")
        XCTAssertEqual(try upgrade("Connection: keep-alive, upgrade\r\nUpgrade: WebSocket\r\n"), "websocket")
        XCTAssertEqual(try upgrade("Connection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\n"), "h2c")
        XCTAssertEqual(try upgrade("Connection: upgrade\r\nUpgrade: Foo/2, websocket\r\n"), "foo")
        XCTAssertEqual(try upgrade("Connection: close\r\nConnection: upgrade\r\nUpgrade:  websocket \r\n"), "websocket")
    }

    func testNoUpgradeWithoutBothFields() throws {
        XCTAssertNil(try upgrade("Upgrade: websocket\r\n"), "Upgrade alone is not this hop's request")
        XCTAssertNil(try upgrade("Connection: upgrade\r\n"))
        XCTAssertNil(try upgrade("Connection: keep-alive\r\nUpgrade: websocket\r\n"))
        XCTAssertNil(try upgrade("Connection: upgrade\r\nUpgrade: \r\n"))
        XCTAssertNil(try upgrade("Connection: upgrade\r\nUpgrade: /1\r\n"))
        XCTAssertNil(try upgrade(""))
    }
}
