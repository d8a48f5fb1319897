import Config
import XCTest

final class UpstreamAddressTests: XCTestCase {
    private func parse(_ text: String) -> UpstreamAddress? {
        try? UpstreamAddress.parse(text).get()
    }

    func testParseAndAuthority() throws {
        let plain = try XCTUnwrap(parse("http://127.0.0.1:18080"))
        XCTAssertEqual(plain, UpstreamAddress(scheme: "http", host: "127.0.0.1", port: 18080))
        XCTAssertEqual(plain.authority, "127.0.0.1:18080")
        XCTAssertEqual(plain.description, "http://127.0.0.1:18080")

        let defaultPort = try XCTUnwrap(parse("http://api.test"))
        XCTAssertEqual(defaultPort.port, 80)
        XCTAssertEqual(defaultPort.authority, "api.test")
        XCTAssertEqual(defaultPort.description, "http://api.test:80")

        let v6 = try XCTUnwrap(parse("http://[::1]:8080/"))
        XCTAssertEqual(v6.host, "::1")
        XCTAssertEqual(v6.authority, "[::1]:8080")
        XCTAssertEqual(try XCTUnwrap(parse("http://[::1]")).authority, "[::1]")
    }

    func testHTTPSMessage() {
        XCTAssertEqual(UpstreamAddress.parse("https://api.test"), .failure(AddressError("https upstreams are not supported yet")))
    }

    func testRejects() {
        for text in ["http://a.test/x", "http://a.test?x", "http://a.test#f", "http://u@a.test", "ws://a.test",
                     "//a.test", "http://a.test:0", "http://::1:80", "http://a..test"] {
            XCTAssertNil(parse(text), text)
        }
    }
}
