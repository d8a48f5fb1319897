import Config
import XCTest

final class EndpointURLTests: XCTestCase {
    private func parse(_ text: String, allowQuery: Bool = false) -> EndpointURL? {
        try? EndpointURL.parse(text, allowQuery: allowQuery).get()
    }

    private func message(_ text: String, allowQuery: Bool = false) -> String? {
        if case .failure(let error) = EndpointURL.parse(text, allowQuery: allowQuery) { return error.message }
        return nil
    }

    func testHTTPSWithPath() throws {
        let url = try XCTUnwrap(parse("HTTPS://MCA.Example.com./imf-authserver/"))
        XCTAssertEqual(url, EndpointURL(scheme: "https", host: "mca.example.com", port: 443, path: "/imf-authserver/"))
        XCTAssertTrue(url.isTLS)
        XCTAssertEqual(url.authority, "mca.example.com")
        XCTAssertEqual(url.requestTarget, "/imf-authserver/")
        XCTAssertEqual(url.description, "https://mca.example.com:443/imf-authserver/")
    }

    func testDefaultsAndPorts() throws {
        let bare = try XCTUnwrap(parse("http://idp.test"))
        XCTAssertEqual(bare.port, 80)
        XCTAssertEqual(bare.path, "/")
        XCTAssertFalse(bare.isTLS)
        XCTAssertEqual(bare.authority, "idp.test")
        XCTAssertEqual(bare.description, "http://idp.test:80/")
        XCTAssertEqual(try XCTUnwrap(parse("https://idp.test:8443/t")).authority, "idp.test:8443")
        XCTAssertEqual(try XCTUnwrap(parse("http://idp.test:443/t")).authority, "idp.test:443")
        let v6 = try XCTUnwrap(parse("https://[::1]:9443/oauth/token"))
        XCTAssertEqual(v6.host, "::1")
        XCTAssertEqual(v6.authority, "[::1]:9443")
        XCTAssertEqual(v6.description, "https://[::1]:9443/oauth/token")
        XCTAssertEqual(EndpointURL(scheme: "https", host: "a.test").port, 443)
    }

    func testQuery() throws {
        XCTAssertEqual(message("https://idp.test/token?a=b"), "URL must not have a query")
        let url = try XCTUnwrap(parse("https://idp.test/token?a=b&c=%20", allowQuery: true))
        XCTAssertEqual(url.path, "/token")
        XCTAssertEqual(url.query, "a=b&c=%20")
        XCTAssertEqual(url.requestTarget, "/token?a=b&c=%20")
        XCTAssertEqual(try XCTUnwrap(parse("https://idp.test?x", allowQuery: true)).requestTarget, "/?x")
        XCTAssertNil(try XCTUnwrap(parse("https://idp.test/token", allowQuery: true)).query)
    }

    func testPercentEscapesInPath() throws {
        XCTAssertEqual(try XCTUnwrap(parse("https://idp.test/a%2Fb/c:d@e")).path, "/a%2Fb/c:d@e")
        XCTAssertEqual(message("https://idp.test/a%2"), "URL path has a '%' not followed by two hex digits")
        XCTAssertEqual(message("https://idp.test/a%zz"), "URL path has a '%' not followed by two hex digits")
    }

    func testRejects() {
        let cases: [(String, String)] = [
            ("idp.test/token", "expected a URL like https://host[:port]/path"),
            ("ftp://idp.test", "unsupported scheme 'ftp': expected http:// or https://"),
            ("https://idp.test/token#frag", "URL must not have a fragment"),
            ("https://user:pw@idp.test/token", "URL must not contain userinfo (user@)"),
            ("https:///token", "URL has no host"),
            ("https://idp.test:0/token", "invalid port '0': expected a number from 1 to 65535"),
            ("https://idp..test/", "host name 'idp..test' has an empty label"),
            ("https://::1/", "IPv6 addresses must be written in brackets, e.g. [::1]:8080"),
            ("https://idp.test/a b", "URL path contains U+0020, which must be percent-encoded"),
            ("https://idp.test/a\"b", "URL path contains '\"', which must be percent-encoded"),
            ("https://idp.test/ä", "URL path contains 'ä', which must be percent-encoded"),
        ]
        for (text, expected) in cases {
            XCTAssertEqual(message(text), expected, text)
        }
    }
}
