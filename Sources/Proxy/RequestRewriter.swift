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
        out.appendUTF8(request.method)
        out.append(0x20)
        switch request.target {
        case .origin(let path): out.appendUTF8(path)
        case .absolute(_, _, let path): out.appendUTF8(path)
        case .asterisk: out.append(0x2a)
        case .authority(let authority): out.appendUTF8(authority.description)
        }
        out.append(contentsOf: HeadBytes.spaceHTTP11Host)
        out.appendUTF8(decision.hostField)
        out.append(contentsOf: HeadBytes.crlf)

        let connectionNamed = request.fields.connectionOptions()
        let stripAuthorization = decision.credential != nil
        let perRequest = decision.perRequest
        for field in request.fields {
            if field.nameEquals("host") { continue }
            if field.nameEquals("content-length") {
                // Re-emitted below from the parsed framing (one canonical line).
                continue
            }
            if FieldNames.isHopByHop(field) { continue }
            if stripAuthorization && field.nameEquals("authorization") { continue }
            if !connectionNamed.isEmpty && FieldNames.isNamed(field, in: connectionNamed) { continue }
            if let perRequest, perRequest.consumes(field) { continue }
            out.appendField(field.name, field.value)
        }
        switch request.framing {
        case .contentLength(let length):
            out.append(contentsOf: HeadBytes.contentLengthPrefix)
            out.appendDecimal(Int(length))
            out.append(contentsOf: HeadBytes.crlf)
        case .chunked:
            out.append(contentsOf: HeadBytes.chunkedLine)
        case .none, .untilClose:
            break
        }
        if let token { out.append(contentsOf: token.headerLine) }
        out.append(contentsOf: viaLine)
        out.append(contentsOf: HeadBytes.crlf)
        return out
    }
}
