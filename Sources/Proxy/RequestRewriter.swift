import HTTP1
import TokenManager

/// Builds the head sent upstream from a client's request head.
///
/// Order matters for safety: every hop-by-hop field (including those the client names in
/// `Connection`) and, for credentialed routes, every client `Authorization` line is dropped
/// first; only then is the single injected `Authorization` added — so `Connection: close,
/// Authorization` from a client can never remove the token the proxy adds.
enum RequestRewriter {
    static let viaLine: [UInt8] = Array("Via: 1.1 token-sidecar\r\n".utf8)

    /// The upstream request head: origin-form target, HTTP/1.1, `Host` per the route, the token
    /// line when `token` is given, `Via`, and chunked framing when the client's body is chunked.
    static func head(for request: RequestHead, decision: RouteDecision, token: AccessToken?) -> [UInt8] {
        var out = [UInt8]()
        out.reserveCapacity(512)
        out.append(contentsOf: request.method.utf8)
        out.append(0x20)
        switch request.target {
        case .origin(let path): out.append(contentsOf: path.utf8)
        case .absolute(_, _, let path): out.append(contentsOf: path.utf8)
        case .asterisk: out.append(0x2a)
        case .authority(let authority): out.append(contentsOf: authority.description.utf8)
        }
        out.append(contentsOf: " HTTP/1.1\r\nHost: ".utf8)
        out.append(contentsOf: decision.hostField.utf8)
        out.append(contentsOf: "\r\n".utf8)

        let connectionNamed = request.fields.tokens("connection")
        let stripAuthorization = decision.credential != nil
        for field in request.fields {
            if FieldNames.equal(field.name, "host") { continue }
            if FieldNames.equal(field.name, "content-length") {
                // Re-emitted below from the parsed framing (one canonical line).
                continue
            }
            if FieldNames.contains(FieldNames.hopByHop, field.name) { continue }
            if stripAuthorization && FieldNames.equal(field.name, "authorization") { continue }
            if !connectionNamed.isEmpty && FieldNames.contains(connectionNamed, field.name) { continue }
            out.append(contentsOf: field.name.utf8)
            out.append(contentsOf: ": ".utf8)
            out.append(contentsOf: field.value.utf8)
            out.append(contentsOf: "\r\n".utf8)
        }
        switch request.framing {
        case .contentLength(let length):
            out.append(contentsOf: "Content-Length: \(length)\r\n".utf8)
        case .chunked:
            out.append(contentsOf: "Transfer-Encoding: chunked\r\n".utf8)
        case .none, .untilClose:
            break
        }
        if let token { out.append(contentsOf: token.headerLine) }
        out.append(contentsOf: viaLine)
        out.append(contentsOf: "\r\n".utf8)
        return out
    }
}
