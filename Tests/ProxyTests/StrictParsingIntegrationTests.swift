import XCTest

/// Acceptance: every malformed-request vector gets 400 (or 431), the connection is closed, and
/// not one byte reaches the backend.
final class StrictParsingIntegrationTests: XCTestCase {
    private static let host = "Host: api.test\r\n"

    /// (name, raw request, expected status)
    static let vectors: [(String, String, Int)] = {
        let h = host
        var v: [(String, String, Int)] = [
            ("CL and TE", "POST /x HTTP/1.1\r\n\(h)Content-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", 400),
            ("two CL", "POST /x HTTP/1.1\r\n\(h)Content-Length: 5\r\nContent-Length: 5\r\n\r\nhello", 400),
            ("TE final not chunked", "POST /x HTTP/1.1\r\n\(h)Transfer-Encoding: gzip\r\n\r\nhello", 400),
            ("chunked twice", "POST /x HTTP/1.1\r\n\(h)Transfer-Encoding: chunked, chunked\r\n\r\n0\r\n\r\n", 400),
            ("chunked twice across lines", "POST /x HTTP/1.1\r\n\(h)Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", 400),
            ("xchunked", "POST /x HTTP/1.1\r\n\(h)Transfer-Encoding: xchunked\r\n\r\n0\r\n\r\n", 400),
            ("chunked1", "POST /x HTTP/1.1\r\n\(h)Transfer-Encoding: chunked1\r\n\r\n0\r\n\r\n", 400),
            ("TE in HTTP/1.0", "POST /x HTTP/1.0\r\n\(h)Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n", 400),
            ("space before colon", "GET /x HTTP/1.1\r\nHost : api.test\r\n\r\n", 400),
            ("obs-fold", "GET /x HTTP/1.1\r\n\(h)X-A: a\r\n  folded\r\n\r\n", 400),
            ("NUL in field", "GET /x HTTP/1.1\r\n\(h)X-A: a\u{0}b\r\n\r\n", 400),
            ("bare CR in field", "GET /x HTTP/1.1\r\n\(h)X-A: a\rb\r\n\r\n", 400),
            ("control char in field", "GET /x HTTP/1.1\r\n\(h)X-A: a\u{1}b\r\n\r\n", 400),
            ("bare LF endings", "GET /x HTTP/1.1\nHost: api.test\n\n", 400),
            ("chunk size 0x", "POST /x HTTP/1.1\r\n\(h)Transfer-Encoding: chunked\r\n\r\n0x5\r\nhello\r\n0\r\n\r\n", 400),
            ("chunk size +", "POST /x HTTP/1.1\r\n\(h)Transfer-Encoding: chunked\r\n\r\n+5\r\nhello\r\n0\r\n\r\n", 400),
            ("chunk size -", "POST /x HTTP/1.1\r\n\(h)Transfer-Encoding: chunked\r\n\r\n-5\r\nhello\r\n0\r\n\r\n", 400),
            ("chunk size space", "POST /x HTTP/1.1\r\n\(h)Transfer-Encoding: chunked\r\n\r\n 5\r\nhello\r\n0\r\n\r\n", 400),
            ("chunk size non-hex", "POST /x HTTP/1.1\r\n\(h)Transfer-Encoding: chunked\r\n\r\nzz\r\nhello\r\n0\r\n\r\n", 400),
            ("chunk size overflow", "POST /x HTTP/1.1\r\n\(h)Transfer-Encoding: chunked\r\n\r\nfffffffffffffffffff\r\nhello\r\n0\r\n\r\n", 400),
            ("missing CRLF after chunk", "POST /x HTTP/1.1\r\n\(h)Transfer-Encoding: chunked\r\n\r\n5\r\nhelloXY0\r\n\r\n", 400),
            ("chunk extension > 4 KiB", "POST /x HTTP/1.1\r\n\(h)Transfer-Encoding: chunked\r\n\r\n5;\(String(repeating: "a", count: 5000))\r\nhello\r\n0\r\n\r\n", 400),
            ("missing Host", "GET /x HTTP/1.1\r\n\r\n", 400),
            ("duplicate Host", "GET /x HTTP/1.1\r\n\(h)\(h)\r\n", 400),
            ("authority disagrees with Host", "GET http://api.test/x HTTP/1.1\r\nHost: other.test\r\n\r\n", 400),
            ("userinfo", "GET http://a@api.test/x HTTP/1.1\r\n\(h)\r\n", 400),
            ("fragment", "GET /x#frag HTTP/1.1\r\n\(h)\r\n", 400),
            ("HTTP/2.0", "GET /x HTTP/2.0\r\n\(h)\r\n", 400),
            ("HTTP/1.2", "GET /x HTTP/1.2\r\n\(h)\r\n", 400),
            ("head > 64 KiB", "GET /x HTTP/1.1\r\n\(h)X-Big: \(String(repeating: "b", count: 70_000))\r\n\r\n", 431),
            ("> 100 fields", "GET /x HTTP/1.1\r\n\(h)" + (0..<101).map { "X-F\($0): v\r\n" }.joined() + "\r\n", 431),
        ]
        for bad in ["+5", "-1", "0x5", "5a", "", "9223372036854775808", "99999999999999999999"] {
            v.append(("Content-Length '\(bad)'", "POST /x HTTP/1.1\r\n\(h)Content-Length: \(bad)\r\n\r\nhello", 400))
        }
        return v
    }()

    func testEveryMalformedVectorIsRejectedClosedAndNeverForwarded() throws {
        let backend = try Backend()
        let proxy = try ProxyHarness(yaml: ProxyHarness.yaml(backendPort: backend.port))
        for (name, raw, expected) in Self.vectors {
            let client = try RawClient(port: proxy.port, timeout: 5)
            client.send(raw)
            let response = try client.readResponse()
            XCTAssertEqual(response.status, expected, name)
            XCTAssertNotNil(response.header("Proxy-Status"), name)
            XCTAssertEqual(response.json?["error"] as? String, "http_request_error", name)
            XCTAssertTrue(client.waitForClose(), "\(name): connection not closed")
            Thread.sleep(forTimeInterval: 0.02)
            XCTAssertEqual(backend.connections().count, 0, "\(name) reached the backend")
        }
        // A valid request afterwards proves the backend was reachable all along.
        let client = try RawClient(port: proxy.port)
        client.send("GET /ok HTTP/1.1\r\n\(Self.host)Connection: close\r\n\r\n")
        XCTAssertEqual(try client.readResponse().status, 200)
        let requests = backend.requests()
        XCTAssertEqual(requests.count, 1, "only the valid request may reach the backend")
        XCTAssertEqual(requests.first?["target"] as? String, "/ok")
        XCTAssertEqual(backend.connections().count, 1, "malformed requests must not even open a backend connection")
    }

    func testValidVariationsAreAccepted() throws {
        let backend = try Backend()
        let proxy = try ProxyHarness(yaml: ProxyHarness.yaml(backendPort: backend.port))
        let variations = [
            "GET /a HTTP/1.1\r\nhOsT: api.test\r\n\r\n",
            "POST /b HTTP/1.1\r\nHost: api.test\r\nTransfer-Encoding:\tCHUNKED\r\n\r\n5\r\nhello\r\n0\r\n\r\n",
            "GET /c HTTP/1.1\r\nHost:   api.test  \r\nX-Ows: \t value \t\r\n\r\n",
            "GET http://API.test/d HTTP/1.1\r\nHost: api.test\r\n\r\n",
        ]
        let client = try RawClient(port: proxy.port)
        for raw in variations {
            client.send(raw)
            XCTAssertEqual(try client.readResponse().status, 200, raw)
        }
        let requests = backend.requests()
        XCTAssertEqual(requests.map { $0["target"] as? String }, ["/a", "/b", "/c", "/d"])
        XCTAssertEqual(requests[1]["body_len"] as? Int, 5)
        XCTAssertEqual(Backend.headerValues(requests[2], "X-Ows"), ["value"])
    }
}
