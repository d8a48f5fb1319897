import HTTP1Fuzzing
import TestSupport

/// The seed corpora of the fuzzers in Fuzz/, generated from the vectors the tests know: valid
/// messages, every malformed request of ``MalformedRequests`` (the smuggling shapes), response
/// and chunked edge cases, and truncations of valid messages. `FuzzCorpusTests` checks that
/// Fuzz/Corpus holds exactly these files; `WRITE_FUZZ_SEEDS=1 swift test --filter FuzzCorpusTests`
/// writes them.
enum FuzzSeeds {
    /// Seed files per fuzz target directory: name → raw fuzz input (selector byte + message).
    static var all: [String: [String: [UInt8]]] {
        ["request-head": requestHeads, "response-head": responseHeads, "chunked": chunkedBodies]
    }

    static let validRequests: [(String, String)] = [
        ("get-origin", "GET /a?b=c HTTP/1.1\r\nHost: api.test\r\nAccept: */*\r\n\r\n"),
        ("get-absolute", "GET http://api.test:8080/x HTTP/1.1\r\nHost: api.test:8080\r\n\r\n"),
        ("get-absolute-empty-path", "GET http://api.test HTTP/1.1\r\nHost: api.test\r\n\r\n"),
        ("get-ipv6", "GET http://[::1]:81/ HTTP/1.1\r\nHost: [::1]:81\r\n\r\n"),
        ("connect", "CONNECT api.test:443 HTTP/1.1\r\nHost: api.test:443\r\n\r\n"),
        ("options-asterisk", "OPTIONS * HTTP/1.1\r\nHost: api.test\r\n\r\n"),
        ("post-length", "POST /x HTTP/1.1\r\nHost: api.test\r\nContent-Length: 5\r\n\r\nhello"),
        ("post-chunked-trailers", "POST /x HTTP/1.1\r\nHost: api.test\r\nTransfer-Encoding: chunked\r\n\r\n5;a=b\r\nhello\r\n0\r\nX-T: 1\r\n\r\n"),
        ("post-gzip-chunked", "POST /x HTTP/1.1\r\nHost: api.test\r\nTransfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n"),
        ("expect-continue", "PUT /x HTTP/1.1\r\nHost: api.test\r\nExpect: 100-continue\r\nContent-Length: 2\r\n\r\nok"),
        ("http10-keep-alive", "GET /x HTTP/1.0\r\nConnection: keep-alive\r\n\r\n"),
        ("connection-close", "GET /x HTTP/1.1\r\nHost: api.test\r\nConnection: close, X-Hop\r\nX-Hop: 1\r\n\r\n"),
        ("leading-empty-lines", "\r\n\r\nGET /x HTTP/1.1\r\nHost: api.test\r\n\r\n"),
        ("empty-values-ows", "GET /x HTTP/1.1\r\nHost: api.test\r\nX-Empty:\r\nX-Ows: \t v \t\r\n\r\n"),
        ("obs-text-value", "GET /x HTTP/1.1\r\nHost: api.test\r\nX-U: caf\u{e9}\r\n\r\n"),
        ("lowercase-method", "get /x HTTP/1.1\r\nHost: api.test\r\n\r\n"),
        ("pipelined", "GET /1 HTTP/1.1\r\nHost: api.test\r\n\r\nGET /2 HTTP/1.1\r\nHost: api.test\r\n\r\n"),
    ]

    /// Requests the RFCs let a recipient accept or reject; HTTP1 rejects them.
    static let edgeRequests: [(String, String)] = [
        ("content-length-list", "POST /x HTTP/1.1\r\nHost: api.test\r\nContent-Length: 5, 5\r\n\r\nhello"),
    ]

    static var requestHeads: [String: [UInt8]] {
        var seeds: [String: [UInt8]] = [:]
        for (name, raw) in edgeRequests { seeds["edge-\(name)"] = FuzzInput.encode(Array(raw.utf8), selector: 5) }
        for (index, (name, raw)) in validRequests.enumerated() {
            seeds["valid-\(name)"] = FuzzInput.encode(Array(raw.utf8), selector: UInt8(index % 16))
            let bytes = Array(raw.utf8)
            seeds["truncated-\(name)"] = FuzzInput.encode(Array(bytes.prefix(bytes.count * 2 / 3)), selector: 2)
        }
        for (index, vector) in MalformedRequests.vectors.enumerated() {
            seeds["malformed-\(slug(vector.name))"] = FuzzInput.encode(Array(vector.raw.utf8), selector: UInt8(index % 16))
        }
        return seeds
    }

    static let responses: [(String, String)] = [
        ("200-length", "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"),
        ("200-chunked", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n"),
        ("200-close-delimited", "HTTP/1.1 200 OK\r\nConnection: close\r\n\r\nbody"),
        ("204", "HTTP/1.1 204 No Content\r\nContent-Length: 7\r\n\r\n"),
        ("304", "HTTP/1.1 304 Not Modified\r\nETag: \"x\"\r\n\r\n"),
        ("100-continue", "HTTP/1.1 100 Continue\r\n\r\n"),
        ("http10", "HTTP/1.0 200 OK\r\nContent-Length: 0\r\n\r\n"),
        ("no-reason", "HTTP/1.1 200 \r\nContent-Length: 0\r\n\r\n"),
        ("no-sp-after-code", "HTTP/1.1 200\r\nContent-Length: 0\r\n\r\n"),
        ("te-gzip", "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\nbody"),
        ("401-www-authenticate", "HTTP/1.1 401 Unauthorized\r\nWWW-Authenticate: Bearer error=\"invalid_token\"\r\nContent-Length: 0\r\n\r\n"),
        ("malformed-cl-and-te", "HTTP/1.1 200 OK\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"),
        ("malformed-two-cl", "HTTP/1.1 200 OK\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\nabcd"),
        ("malformed-te-http10", "HTTP/1.0 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"),
        ("malformed-status", "HTTP/1.1 20 OK\r\n\r\n"),
        ("malformed-obs-fold", "HTTP/1.1 200 OK\r\nX-A: a\r\n b\r\n\r\n"),
        ("malformed-bare-lf", "HTTP/1.1 200 OK\nContent-Length: 0\n\n"),
        ("malformed-version", "HTTP/2 200 OK\r\n\r\n"),
    ]

    static var responseHeads: [String: [UInt8]] {
        var seeds: [String: [UInt8]] = [:]
        for (index, (name, raw)) in responses.enumerated() {
            // The high nibble picks the request method (GET, HEAD, CONNECT, POST).
            seeds[name] = FuzzInput.encode(Array(raw.utf8), selector: UInt8(((index % 4) << 4) | (index % 16)))
        }
        return seeds
    }

    static let bodies: [(String, String)] = [
        ("one-chunk", "5\r\nhello\r\n0\r\n\r\n"),
        ("chunks-extensions", "5;a=b;c=\"d\"\r\nhello\r\nA\r\n0123456789\r\n0\r\n\r\n"),
        ("trailers", "1\r\nx\r\n0\r\nX-T: 1\r\nY: 2\r\n\r\n"),
        ("uppercase-hex", "1F\r\n0123456789012345678901234567890\r\n0\r\n\r\n"),
        ("leading-zeros", "0005\r\nhello\r\n000\r\n\r\n"),
        ("malformed-0x", "0x5\r\nhello\r\n0\r\n\r\n"),
        ("malformed-space", " 5\r\nhello\r\n0\r\n\r\n"),
        ("malformed-overflow", "fffffffffffffffffff\r\nx\r\n0\r\n\r\n"),
        ("malformed-missing-crlf", "5\r\nhelloXY0\r\n\r\n"),
        ("malformed-bare-lf", "5\nhello\n0\n\n"),
        ("malformed-trailer-fold", "0\r\nX-T: 1\r\n folded\r\n\r\n"),
        ("malformed-long-extension", "5;" + String(repeating: "e", count: 5000) + "\r\nhello\r\n0\r\n\r\n"),
    ]

    static var chunkedBodies: [String: [UInt8]] {
        var seeds: [String: [UInt8]] = [:]
        for (index, (name, raw)) in bodies.enumerated() {
            seeds[name] = FuzzInput.encode(Array(raw.utf8), selector: UInt8(index % 16))
            if !name.hasPrefix("malformed") {
                let bytes = Array(raw.utf8)
                seeds["truncated-\(name)"] = FuzzInput.encode(Array(bytes.prefix(bytes.count / 2)), selector: 0)
            }
        }
        return seeds
    }

    /// `"CL and TE"` → `"cl-and-te"`.
    static func slug(_ name: String) -> String {
        var out = ""
        for character in name.lowercased() {
            if character.isLetter || character.isNumber {
                out.append(character)
            } else if !out.hasSuffix("-") {
                out.append("-")
            }
        }
        return String(out.trimmingPrefix("-").reversed().drop { $0 == "-" }.reversed())
    }
}
