/// Malformed HTTP/1.1 requests every server of this project must refuse with 400 (or 431 for
/// an oversized head) and a closed connection: request smuggling shapes (CL+TE, duplicate or
/// bogus framing), bad field syntax, bad chunk framing, bad targets and versions. The proxy's
/// and the admin server's tests feed both the same list, so one codec's strictness is checked
/// in both places.
public enum MalformedRequests {
    /// (name, raw request, expected status).
    public static let vectors: [(name: String, raw: String, status: Int)] = {
        let h = "Host: api.test\r\n"
        var v: [(name: String, raw: String, status: Int)] = [
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
}
