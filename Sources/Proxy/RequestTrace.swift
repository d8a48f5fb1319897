import HTTP1
import TokenManager
import Tracing

/// The spans of one proxied request, following the OpenTelemetry HTTP semantic conventions: a
/// server span for the request the app made (the child of the app's span when it sent a valid
/// `traceparent`), a client span per upstream attempt (a 401 replay or a retry is a second
/// one, with an event on the server span saying why), the time spent waiting for a token
/// (`token_sidecar.token.wait`) and a link to the fetch that the wait ended with.
///
/// Exists only while tracing is on. An unsampled trace only carries the ids the upstream's
/// `traceparent` needs: what a recorded trace gathers lives in ``Recording``, made only for a
/// sampled one, so an unsampled request costs one small object and no clock read.
final class RequestTrace {
    /// Where the spans go.
    let tracer: Tracer
    /// The app's span, when it sent a valid `traceparent` (nil: the sidecar started the trace).
    let parent: SpanContext?
    /// The request's server span.
    let server: SpanContext
    /// The app's `tracestate` (its fields joined), kept only under the app's own parent.
    let traceState: String?
    /// The attempt under way: its span (`spanID` 0 when none is open).
    private var attempt: SpanContext
    /// Attempts so far.
    private var attempts: UInt64 = 0
    /// What a sampled trace records.
    private var recording: Recording?

    /// What a sampled request's spans gather while it runs.
    private final class Recording {
        /// When the request's head was complete, nanoseconds since 1970.
        let startNanos = Tracer.nowNanos()
        /// When the attempt under way started.
        var attemptStartNanos: UInt64 = 0
        var events: [SpanEvent] = []
        var links: [SpanLink] = []
        var waitStartNanos: UInt64?
        var waitedNanos: UInt64 = 0
    }

    /// The trace of `io`'s request. Out of line, like every entry the session calls: inlined
    /// into the session's hot paths, even code behind a nil check costs untraced requests.
    @inline(never)
    static func start(_ io: ExchangeIO, tracer: Tracer, ids: inout IDGenerator) -> RequestTrace {
        RequestTrace(head: io.head, tracer: tracer, ids: &ids)
    }

    /// The trace of a request with `head`: its `traceparent` (exactly one valid field) is the
    /// parent, its `tracestate` fields (joined) stay with the trace.
    init(head: borrowing RequestHead, tracer: Tracer, ids: inout IDGenerator) {
        self.tracer = tracer
        // Read in place: only the two trace fields, never a String per field.
        let (parent, traceState) = head.withFieldSection { section -> (SpanContext?, String?) in
            var traceParents = 0
            var parent: SpanContext?
            var traceState: String?
            for line in section.lines {
                if section.name(of: line, equals: "traceparent") {
                    traceParents += 1
                    parent = TraceParent.parse(bytes: section.value(of: line))
                } else if section.name(of: line, equals: "tracestate") {
                    let value = String(decoding: section.value(of: line), as: UTF8.self)
                    traceState = traceState.map { $0 + "," + value } ?? value
                }
            }
            // Two traceparent fields are not one valid parent (W3C Trace Context §3.2): a new
            // trace, and the app's tracestate goes with the app's trace.
            guard traceParents == 1, let parent else { return (nil, nil) }
            return (parent, traceState)
        }
        self.parent = parent
        self.traceState = traceState
        server = tracer.newSpan(parent: parent, ids: &ids)
        attempt = SpanContext(traceID: server.traceID, spanID: SpanID(0), sampled: server.sampled)
        if server.sampled { recording = Recording() }
    }

    /// How the upstream request's trace fields are written for the attempt starting now.
    func startAttempt() -> TraceFieldRewrite {
        attempts += 1
        // The attempt's id: the server span's mixed with the attempt number (SplitMix64's
        // finalizer), unique within the trace without a generator per request.
        var mixed = server.spanID.value &+ attempts &* 0x9E37_79B9_7F4A_7C15
        mixed = (mixed ^ (mixed >> 30)) &* 0xBF58_476D_1CE4_E5B9
        mixed = (mixed ^ (mixed >> 27)) &* 0x94D0_49BB_1331_11EB
        mixed ^= mixed >> 31
        attempt.spanID = SpanID(mixed == 0 ? 1 : mixed)
        if let recording { recording.attemptStartNanos = Tracer.nowNanos() }
        return TraceFieldRewrite(traceParent: attempt, keepTraceState: parent != nil)
    }

    /// The attempt under way ended: with the upstream's `status` when a head arrived, or
    /// `error` (a Proxy-Status error type) when it failed.
    func endAttempt(method: String, target: UpstreamTarget, path: String, status: Int?, error: String?) {
        guard attempt.spanID.isValid else { return }
        let context = attempt
        attempt.spanID = SpanID(0)
        guard let recording else { return }
        var attributes = [
            SpanAttribute("http.request.method", .string(method)),
            SpanAttribute("server.address", .string(target.host)),
            SpanAttribute("server.port", .int(Int64(target.port))),
            SpanAttribute("url.full", .string((target.tls == nil ? "http://" : "https://") + Self.authority(target) + path)),
            SpanAttribute("network.protocol.version", .string("1.1")),
        ]
        if attempts > 1 { attributes.append(SpanAttribute("http.request.resend_count", .int(Int64(attempts - 1)))) }
        if let status { attributes.append(SpanAttribute("http.response.status_code", .int(Int64(status)))) }
        // Client spans: a 4xx or 5xx answer is an error (HTTP semantic conventions).
        let errorType = error ?? status.flatMap { $0 >= 400 ? String($0) : nil }
        if let errorType { attributes.append(SpanAttribute("error.type", .string(errorType))) }
        tracer.end(SpanRecord(context: context, traceState: traceState, parentSpanID: server.spanID, name: method, kind: .client,
                              startNanos: recording.attemptStartNanos, endNanos: Tracer.nowNanos(), attributes: attributes,
                              status: errorType.map { .error($0) } ?? .unset))
    }

    /// The attempt under way was answered 401: it is over, and the wait for a different token
    /// (the replay's) is the request's.
    @inline(never)
    func rejected(_ io: ExchangeIO) {
        tokenWaitStarted()
        guard recording != nil else { return }
        endAttempt(method: io.head.method, target: io.target, path: ClientSession.pathWithoutQuery(io.head.target),
                   status: io.responseHead?.status, error: nil)
    }

    /// `io`'s request is sent again: a replay (a 401, a DPoP nonce) or a retry (a pooled
    /// connection closed first). Ends the attempt still open and says why on the server span.
    @inline(never)
    func resending(_ io: ExchangeIO, replay: Bool) {
        guard recording != nil else {
            attempt.spanID = SpanID(0)
            return
        }
        let status = io.responseHead?.status
        endAttempt(method: io.head.method, target: io.target, path: ClientSession.pathWithoutQuery(io.head.target), status: status,
                   error: status == nil ? "connection_closed" : nil)
        if replay {
            resent("token_sidecar.replay", reason: status == 401
                ? "the upstream answered 401 to the token; the request is replayed with a different one"
                : "the upstream asked for a DPoP nonce; the request is replayed with a proof carrying it")
        } else {
            resent("token_sidecar.retry", reason: "the pooled connection closed before answering; the request is retried on a new one")
        }
    }

    /// `io`'s request was answered: ends its spans.
    @inline(never)
    func finish(_ io: ExchangeIO, status: Int, error: String?) {
        // An unsampled trace records nothing: nothing to gather.
        guard recording != nil else { return }
        end(head: io.head, route: io.decision.routeName, credential: io.decision.credential?.name, target: io.target,
            status: status, error: error)
    }

    /// The request is resent (`event`: `token_sidecar.replay` or `token_sidecar.retry`), and why.
    func resent(_ event: String, reason: String) {
        recording?.events.append(SpanEvent(timeNanos: Tracer.nowNanos(), name: event,
                                           attributes: [SpanAttribute("token_sidecar.reason", .string(reason))]))
    }

    /// The request starts waiting for a token.
    @inline(never)
    func tokenWaitStarted() {
        recording?.waitStartNanos = Tracer.nowNanos()
    }

    /// The wait ended with `token` (nil: none came); a token a fetch produced is linked.
    @inline(never)
    func tokenWaitEnded(_ token: AccessToken?) {
        guard let recording else { return }
        if let start = recording.waitStartNanos { recording.waitedNanos += Tracer.nowNanos() &- start }
        recording.waitStartNanos = nil
        if let fetch = token?.fetchSpan, !recording.links.contains(where: { $0.context == fetch }) {
            recording.links.append(SpanLink(context: fetch, attributes: [SpanAttribute("token_sidecar.link", .string("token fetch waited for"))]))
        }
    }

    /// The request was answered with `status` (`error`: the Proxy-Status error type when the
    /// proxy answered with an error): ends the open attempt and the server span.
    func end(head: borrowing RequestHead, route: String?, credential: String?, target: UpstreamTarget?, status: Int, error: String?) {
        guard let recording else { return }
        if let target, attempt.spanID.isValid {
            // A response ended without one of ours: its status is the upstream's.
            endAttempt(method: head.method, target: target, path: ClientSession.pathWithoutQuery(head.target),
                       status: error == nil && status > 0 ? status : nil, error: error ?? (status > 0 ? nil : "response_incomplete"))
        }
        var attributes = Self.serverAttributes(head)
        if status > 0 { attributes.append(SpanAttribute("http.response.status_code", .int(Int64(status)))) }
        // Server spans: only a 5xx is an error (a 4xx is the client's).
        let errorType = error ?? (status >= 500 ? String(status) : nil)
        if let errorType { attributes.append(SpanAttribute("error.type", .string(errorType))) }
        if let route { attributes.append(SpanAttribute("token_sidecar.route", .string(route))) }
        if let credential {
            attributes.append(SpanAttribute("token_sidecar.credential", .string(credential)))
            if let start = recording.waitStartNanos { recording.waitedNanos += Tracer.nowNanos() &- start }
            attributes.append(SpanAttribute("token_sidecar.token.wait", .double(Double(recording.waitedNanos) / 1e9)))
        }
        tracer.end(SpanRecord(context: server, traceState: traceState, parentSpanID: parent?.spanID, parentIsRemote: parent != nil,
                              name: head.method, kind: .server, startNanos: recording.startNanos, endNanos: Tracer.nowNanos(),
                              attributes: attributes, events: recording.events, links: recording.links,
                              status: status >= 500 ? .error(errorType ?? String(status)) : .unset))
    }

    /// The server span of a request answered before any exchange (no route, a refused
    /// CONNECT, a loop), when tracing is on.
    static func refused(head: borrowing RequestHead, tracer: Tracer, ids: inout IDGenerator, status: Int, error: String?) {
        let trace = RequestTrace(head: head, tracer: tracer, ids: &ids)
        trace.end(head: head, route: nil, credential: nil, target: nil, status: status, error: error)
    }

    private static func serverAttributes(_ head: borrowing RequestHead) -> [SpanAttribute] {
        var attributes = [SpanAttribute("http.request.method", .string(head.method))]
        let authority: Authority?
        switch head.target {
        case .absolute(let scheme, let target, _):
            attributes.append(SpanAttribute("url.scheme", .string(scheme)))
            authority = target
        case .authority(let target): authority = target
        case .origin, .asterisk: authority = head.host
        }
        attributes.append(SpanAttribute("url.path", .string(ClientSession.pathWithoutQuery(head.target))))
        if let authority {
            attributes.append(SpanAttribute("server.address", .string(authority.host)))
            if let port = authority.port { attributes.append(SpanAttribute("server.port", .int(Int64(port)))) }
        }
        attributes.append(SpanAttribute("network.protocol.version", .string(head.version == .http1_1 ? "1.1" : "1.0")))
        return attributes
    }

    private static func authority(_ target: UpstreamTarget) -> String {
        let host = target.host.contains(":") ? "[\(target.host)]" : target.host
        return "\(host):\(target.port)"
    }
}

/// How an upstream request's W3C trace fields are written while tracing is on: the app's
/// `traceparent` replaced by the attempt's, its `tracestate` kept only under its own parent.
struct TraceFieldRewrite {
    /// The attempt's client span: the upstream's parent.
    let traceParent: SpanContext
    /// Whether the app's `tracestate` fields go on.
    let keepTraceState: Bool
}
