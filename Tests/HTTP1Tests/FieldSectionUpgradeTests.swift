import HTTP1
import XCTest

/// ``FieldSectionView/upgradeProtocol()``: the protocol a request asks to switch to, only with
/// `upgrade` among its Connection options (RFC 9110 §7.8), and only a well-formed first one.
final class FieldSectionUpgradeTests: XCTestCase {
    private func upgrade(_ fields: String) throws -> UpgradeProtocol? {
        try parseRequest("GET /ws HTTP/1.1\r\nHost: a.test\r\n\(fields)\r\n").withFieldSection { $0.upgradeProtocol() }
    }

    func testTheFirstProtocolItsNameLowercaseAndAsSent() throws {
        XCTAssertEqual(try upgrade("Connection: Upgrade\r\nUpgrade: websocket\r\n"), UpgradeProtocol(name: "websocket", text: "websocket"))
        XCTAssertEqual(try upgrade("Connection: keep-alive, upgrade\r\nUpgrade: WebSocket\r\n"), UpgradeProtocol(name: "websocket", text: "WebSocket"))
        XCTAssertEqual(try upgrade("Connection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\n")?.name, "h2c")
        XCTAssertEqual(try upgrade("Connection: upgrade\r\nUpgrade: Foo/2, websocket\r\n"), UpgradeProtocol(name: "foo", text: "Foo/2"))
        XCTAssertEqual(try upgrade("Connection: close\r\nConnection: upgrade\r\nUpgrade:  websocket \r\n")?.text, "websocket")
        // Only the first is ever chosen: a second one (h2c behind websocket) never goes on.
        XCTAssertEqual(try upgrade("Connection: upgrade\r\nUpgrade: websocket\r\nUpgrade: h2c\r\n")?.text, "websocket")
    }

    func testNoUpgradeWithoutBothFieldsOrWithAMalformedProtocol() throws {
        XCTAssertNil(try upgrade("Upgrade: websocket\r\n"), "Upgrade alone is not this hop's request")
        XCTAssertNil(try upgrade("Connection: upgrade\r\n"))
        XCTAssertNil(try upgrade("Connection: keep-alive\r\nUpgrade: websocket\r\n"))
        XCTAssertNil(try upgrade("Connection: upgrade\r\nUpgrade: \r\n"))
        for malformed in ["/1", "foo/", "foo/1/2", "web socket", "a(b)"] {
            XCTAssertNil(try upgrade("Connection: upgrade\r\nUpgrade: \(malformed)\r\n"), malformed)
        }
        XCTAssertNil(try upgrade(""))
    }
}
