import HTTP1
import JSON

/// Builds a proxy-generated error response: an RFC 9209 `Proxy-Status` field and a short JSON
/// body `{"error": "<type>", "message": "<for a person>"}` — as bytes for an HTTP/1.1 app, as
/// status, fields and body for an HTTP/2 stream.
enum ErrorResponse {
    /// The complete response (head and body) for an HTTP/1.1 app. `close` adds
    /// `Connection: close`. `grpc`: the request is a gRPC call, answered as gRPC expects a
    /// failure (``response(for:close:retryAfter:grpc:)``).
    static func bytes(for error: ProxyError, close: Bool, retryAfter: Int? = nil, grpc: Bool = false) -> [UInt8] {
        let response = response(for: error, close: close, retryAfter: retryAfter, grpc: grpc)
        var bytes = HeadSerializer.response(version: .http1_1, status: response.status,
                                            reason: HeadSerializer.reasonPhrase(response.status), fields: response.fields)
        bytes.append(contentsOf: response.body)
        return bytes
    }

    /// The response, as either protocol carries it: its status, its fields (`close` adds
    /// `Connection: close`, which only HTTP/1.1 has) and its body.
    ///
    /// For a gRPC call (`grpc`): HTTP 200 with no body (on HTTP/2, one HEADERS frame that ends
    /// the stream: a trailers-only response), `grpc-status` from the error's HTTP status as gRPC
    /// maps them (with timeouts as `DEADLINE_EXCEEDED`), `grpc-message` for a person
    /// (percent-encoded), and the same `Proxy-Status` as every other error.
    static func response(for error: ProxyError, close: Bool, retryAfter: Int?, grpc: Bool) -> (status: Int, fields: HTTPFields, body: [UInt8]) {
        var fields = HTTPFields()
        if grpc {
            fields.append("content-type", "application/grpc")
            fields.append("grpc-status", String(grpcStatus(for: error)))
            fields.append("grpc-message", percentEncoded(error.message))
            fields.append("proxy-status", "token-sidecar; error=\(error.type); details=\(structuredString(error.message))")
            fields.append("content-length", "0")
            return (200, fields, [])
        }
        var body = "{\"error\": \(JSONString.quoted(error.type)), \"message\": \(JSONString.quoted(error.message))"
        for key in error.details.keys.sorted() {
            body += ", \(JSONString.quoted(key)): \(JSONString.quoted(error.details[key]!))"
        }
        body += "}\n"
        fields.append("Content-Type", "application/json")
        fields.append("Content-Length", String(body.utf8.count))
        fields.append("Cache-Control", "no-store")
        fields.append("Proxy-Status", "token-sidecar; error=\(error.type); details=\(structuredString(error.message))")
        if let retryAfter = retryAfter ?? error.retryAfter { fields.append("Retry-After", String(retryAfter)) }
        if let challenge = error.challenge { fields.append("WWW-Authenticate", challenge) }
        if close { fields.append("Connection", "close") }
        return (error.status, fields, Array(body.utf8))
    }

    /// gRPC's status code for a proxy error: gRPC's own HTTP mapping
    /// (`doc/http-grpc-status-mapping.md`), timeouts as DEADLINE_EXCEEDED, an over-size
    /// request and a route's or credential's limits (the proxy's only 429) as RESOURCE_EXHAUSTED,
    /// `501` as UNIMPLEMENTED.
    static func grpcStatus(for error: ProxyError) -> Int {
        switch error.status {
        case 401: return 16  // UNAUTHENTICATED
        case 403, 421: return 7  // PERMISSION_DENIED (421: this tunnel is not for that host)
        case 404, 501: return 12  // UNIMPLEMENTED
        case 408, 504: return 4  // DEADLINE_EXCEEDED
        case 413, 429, 431: return 8  // RESOURCE_EXHAUSTED
        case 502, 503: return 14  // UNAVAILABLE
        case 400: return 13  // INTERNAL
        default: return 2  // UNKNOWN
        }
    }

    /// `text` as a `grpc-message` value: bytes outside printable ASCII, and `%`, as `%XX`.
    static func percentEncoded(_ text: String) -> String {
        var out = ""
        for byte in text.utf8 {
            if byte >= 0x20 && byte <= 0x7E && byte != 0x25 {
                out.unicodeScalars.append(UnicodeScalar(byte))
            } else {
                out += "%" + String(byte, radix: 16, uppercase: true).leftPadded(to: 2)
            }
        }
        return out
    }

    /// An RFC 8941 sf-string: printable ASCII only, with `"` and `\` escaped.
    static func structuredString(_ text: String) -> String {
        var out = "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            default:
                out.unicodeScalars.append((0x20...0x7e).contains(scalar.value) ? scalar : "?")
            }
        }
        return out + "\""
    }
}

private extension String {
    /// The string with leading zeros up to `width` characters.
    func leftPadded(to width: Int) -> String {
        count >= width ? self : String(repeating: "0", count: width - count) + self
    }
}
