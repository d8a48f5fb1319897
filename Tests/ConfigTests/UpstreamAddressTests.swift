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

    func testHTTPS() throws {
        let secure = try XCTUnwrap(parse("HTTPS://Api.Test/"))
        XCTAssertEqual(secure, UpstreamAddress(scheme: "https", host: "api.test", port: 443))
        XCTAssertTrue(secure.isTLS)
        XCTAssertEqual(secure.authority, "api.test")
        XCTAssertEqual(secure.description, "https://api.test:443")
        let otherPort = try XCTUnwrap(parse("https://api.test:8443"))
        XCTAssertEqual(otherPort.authority, "api.test:8443")
        // :80 is not the default for https, nor :443 for http.
        XCTAssertEqual(try XCTUnwrap(parse("https://api.test:80")).authority, "api.test:80")
        XCTAssertEqual(try XCTUnwrap(parse("http://api.test:443")).authority, "api.test:443")
        XCTAssertEqual(try XCTUnwrap(parse("https://[::1]")).authority, "[::1]")
        XCTAssertFalse(try XCTUnwrap(parse("http://api.test")).isTLS)
    }

    func testSchemeMessage() {
        XCTAssertEqual(UpstreamAddress.parse("ftp://api.test"),
                       .failure(AddressError("unsupported scheme 'ftp': only http:// and https:// upstreams are supported")))
    }

    func testRejects() {
        for text in ["http://a.test/x", "http://a.test?x", "http://a.test#f", "http://u@a.test", "ws://a.test",
                     "//a.test", "http://a.test:0", "http://::1:80", "http://a..test"] {
            XCTAssertNil(parse(text), text)
        }
    }
}
