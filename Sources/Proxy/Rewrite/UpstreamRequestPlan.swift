import EventLoop
import HTTP1
import HTTP2
import TokenManager

/// What an upstream request's head is made from — the app's head, the route's decision, the
/// token, the protocol it switches to and the trace fields — for a head whose form waits for
/// the upstream's protocol (an HTTP/1.1 text head for a socket, a typed head for an HTTP/2
/// stream): both are made by ``RequestRewriter`` from the same rewrite.
struct UpstreamRequestPlan {
    /// The app's request head.
    let head: RequestHead
    /// Where it goes and with which credential.
    let decision: RouteDecision
    /// The token injected (none on a route without a credential).
    let token: AccessToken?
    /// The protocol an HTTP/1.1 request switches to, as the app named it (none for HTTP/2).
    let upgrade: String?
    /// The trace fields' rewrite, while tracing.
    let trace: TraceFieldRewrite?
    /// The protocol the app's request came in (its `Via` entry's version). No default: a head
    /// written for the wrong protocol would say so to every upstream.
    let via: ViaProtocol
    /// The body goes unframed, its end told apart (``UpstreamConnection/endRequestBody()``): an
    /// HTTP/2 app's body of unknown length to an HTTP/2 upstream.
    var bodyEndsWithStream = false

    /// Writes the head as HTTP/1.1 text at the end of `output`; returns its size.
    func writeText(to output: EventBuffer) -> Int {
        if let trace {
            return RequestRewriter.write(head, decision: decision, token: token, upgrade: upgrade, trace: trace, via: via, to: output)
        }
        return RequestRewriter.write(head, decision: decision, token: token, upgrade: upgrade, via: via, to: output)
    }

    /// Opens a stream on `codec` (an HTTP/2 upstream's, with `scheme`) with the head as such an
    /// upstream is sent it (``RequestRewriter/submitHTTP2(_:decision:token:scheme:trace:via:endStream:codec:)``);
    /// returns its id. `endStream`: the request has no body.
    func submitHTTP2(scheme: String, endStream: Bool, codec: HTTP2Codec) throws(HTTP2CodecError) -> Int32 {
        try RequestRewriter.submitHTTP2(head, decision: decision, token: token, scheme: scheme, trace: trace, via: via,
                                        endStream: endStream, codec: codec)
    }

    /// How the body written after the head is framed on an HTTP/2 stream: unframed until its
    /// end is told, or as the head says (an HTTP/1.1 app's body without a length comes as
    /// chunks, de-framed there).
    var http2Body: HTTP2OutboundMessage.Phase {
        bodyEndsWithStream ? .untilEnd : HTTP2OutboundMessage.phase(for: head.framing)
    }
}
