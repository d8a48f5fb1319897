import HTTP1
import JSON

/// Builds the bytes of a proxy-generated error response: an RFC 9209 `Proxy-Status` field and a
/// short JSON body `{"error": "<type>", "message": "<for a person>"}`.
enum ErrorResponse {
    /// The complete response (head and body). `close` adds `Connection: close`.
    static func bytes(for error: ProxyError, close: Bool, retryAfter: Int? = nil) -> [UInt8] {
        var body = "{\"error\": \(JSONString.quoted(error.type)), \"message\": \(JSONString.quoted(error.message))"
        for key in error.details.keys.sorted() {
            body += ", \(JSONString.quoted(key)): \(JSONString.quoted(error.details[key]!))"
        }
        body += "}\n"
        var fields = HTTPFields()
        fields.append("Content-Type", "application/json")
        fields.append("Content-Length", String(body.utf8.count))
        fields.append("Cache-Control", "no-store")
        fields.append("Proxy-Status", "token-sidecar; error=\(error.type); details=\(structuredString(error.message))")
        if let retryAfter = retryAfter ?? error.retryAfter { fields.append("Retry-After", String(retryAfter)) }
        if let challenge = error.challenge { fields.append("WWW-Authenticate", challenge) }
        if close { fields.append("Connection", "close") }
        var bytes = HeadSerializer.response(version: .http1_1, status: error.status,
                                            reason: HeadSerializer.reasonPhrase(error.status), fields: fields)
        bytes.append(contentsOf: body.utf8)
        return bytes
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
