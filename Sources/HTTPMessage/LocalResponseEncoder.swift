import HTTP1

/// Serializes a ``LocalResponse``: status line, the responder's safe headers, framing and
/// persistence headers, then the body unless the method or status forbids one.
public enum LocalResponseEncoder {
    /// Framing and persistence are the server's business; handlers' copies are dropped.
    private static let managed: Set<String> = ["content-length", "transfer-encoding", "connection", "keep-alive"]

    /// The bytes to send, and whether the connection must close after them.
    public static func encode(_ response: LocalResponse, method: String, version: HTTPVersion,
                       keepAlive: Bool) -> (bytes: [UInt8], closes: Bool) {
        // 1xx cannot be a final response, and the serializer needs three digits.
        let status = (200...999).contains(response.status) ? response.status : 500
        var fields = HTTPFields()
        var handlerWantsClose = false
        for (name, value) in response.headers where isSafe(name) && isSafe(value) && !name.isEmpty {
            let lowered = name.lowercased()
            if lowered == "connection" {
                handlerWantsClose = value.lowercased().contains("close")
            }
            if !managed.contains(lowered) { fields.append(name, value) }
        }
        // RFC 9110 §6.4.1: no content for HEAD, 204 and 304; §8.6: no Content-Length on 204.
        let sendsBody = !ResponseHeadParser.hasNoContent(status: status, requestMethod: method)
        if status != 204 && status != 304 {
            fields.append("Content-Length", String(response.body.count))
        }
        let closes = !keepAlive || handlerWantsClose
        if closes {
            fields.append("Connection", "close")
        } else if version == .http1_0 {
            // An HTTP/1.0 client only keeps the connection if told so (RFC 9112 §9.3).
            fields.append("Connection", "keep-alive")
        }
        var bytes = HeadSerializer.response(version: .http1_1, status: status,
                                            reason: HeadSerializer.reasonPhrase(status), fields: fields)
        if sendsBody { bytes.append(contentsOf: response.body) }
        return (bytes, closes)
    }

    /// Whether `text` can be written verbatim into a field line (no CR, LF or NUL).
    private static func isSafe(_ text: String) -> Bool {
        !text.utf8.contains { $0 == 0x0D || $0 == 0x0A || $0 == 0x00 }
    }
}
