import HTTP1
import HTTP2
import TokenManager
import Tracing

/// The upstream request for an HTTP/2 upstream, as a typed head (RFC 9113 §8.3.1): the same
/// rewrite as the HTTP/1.1 head (``RequestRewriter/write(_:decision:token:upgrade:to:)``) —
/// the same lines kept, the same token, proof, trace and `Via` lines added — handed to the
/// codec as name/value pairs, never written as HTTP/1.1 text and parsed back.
extension RequestRewriter {
    /// The head: `:method`, `:scheme` (the upstream's), `:authority` (the `Host` the route
    /// gives), `:path`, then the kept fields (without `host`, `content-length` and every
    /// hop-by-hop field), `content-length` when the body has one, the token, a DPoP proof,
    /// `traceparent` (while tracing), `via`, and `te: trailers` (the sidecar relays trailers;
    /// gRPC servers require it). No `Upgrade`: HTTP/2 has none (a request asking for one goes
    /// on as a plain request).
    static func http2Head(for request: RequestHead, decision: RouteDecision, token: AccessToken?, scheme: String,
                          trace: TraceFieldRewrite? = nil) -> HTTP2Head {
        let path: String
        switch request.target {
        case .origin(let target), .absolute(_, _, let target): path = target
        case .asterisk: path = "*"
        case .authority(let authority): path = authority.description
        }
        var head = HTTP2Head(method: request.method, scheme: scheme, authority: decision.hostField, path: path)
        let binding = token?.binding?.dpopKey == nil ? nil : token?.binding
        let proof = token.flatMap { token in binding.flatMap { dpopProof(for: request, decision: decision, token: token, binding: $0) } }
        let stripAuthorization = decision.credential != nil
        let perRequest = decision.perRequest
        let dropTraceParent = trace != nil, dropTraceState = trace.map { !$0.keepTraceState } ?? false
        request.withFieldSection { section in
            head.reserveFields(section.lines.count + 6, bytes: section.bytes.count + (token?.headerLine.count ?? 0) + 96)
            let connectionNamed = section.connectionOptions()
            for line in section.lines {
                guard keeps(line, in: section, connectionNamed: connectionNamed, stripAuthorization: stripAuthorization,
                            perRequest: perRequest),
                      !(dropTraceParent && isTraceField(line, in: section, orState: dropTraceState)) else { continue }
                head.appendField(name: UnsafeRawBufferPointer(rebasing: section.bytes[line.name]),
                                 value: UnsafeRawBufferPointer(rebasing: section.bytes[line.value]))
            }
        }
        if case .contentLength(let length) = request.framing {
            var digits = String(length)
            digits.withUTF8 { head.appendField(name: "content-length", value: UnsafeRawBufferPointer($0)) }
        }
        if let token {
            // "Authorization: <scheme> <token>\r\n": the value between the name and the CRLF.
            token.headerLine.withUnsafeBytes { line in
                head.appendField(name: "authorization", value: UnsafeRawBufferPointer(rebasing: line[15..<line.count - 2]))
            }
        }
        if var proof {
            proof.withUTF8 { head.appendField(name: "dpop", value: UnsafeRawBufferPointer($0)) }
        }
        if let traceParent = trace?.traceParent {
            var value = [UInt8](repeating: 0, count: TraceParent.length)
            value.withUnsafeMutableBytes { TraceParent.write(traceParent, into: $0) }
            value.withUnsafeBytes { head.appendField(name: "traceparent", value: $0) }
        }
        head.appendField(name: "via", value: UnsafeRawBufferPointer(start: Self.viaValue.utf8Start, count: Self.viaValue.utf8CodeUnitCount))
        head.appendField(name: "te", value: UnsafeRawBufferPointer(start: Self.trailersValue.utf8Start,
                                                                   count: Self.trailersValue.utf8CodeUnitCount))
        return head
    }

    /// `Via`'s value (``HeadBytes/viaLine``'s).
    private static let viaValue: StaticString = "1.1 token-sidecar"
    /// `te`'s only value in HTTP/2.
    private static let trailersValue: StaticString = "trailers"
}
