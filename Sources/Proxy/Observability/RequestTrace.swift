import HTTP1
import TokenManager
import Tracing

/// The spans of one proxied request, following the OpenTelemetry HTTP semantic conventions: a
/// server span for the request the app made (the child of the app's span when it sent a valid
/// `traceparent`), a client span per upstream attempt (a 401 replay or a retry is a second
/// one, with an event on the server span saying why), the time spent waiting for a token
/// (`token_sidecar.token.wait`) and a link to the fetch that the wait ended with.
///
/// Exists only for a sampled request (``TracePropagation`` carries every request's ids): it
/// gathers what the spans record while the request runs.
final class RequestTrace {
    /// Where the spans go.
    let tracer: Tracer
    /// The app's span, when it sent a valid `traceparent` (nil: the sidecar started the trace).
    let parent: SpanContext?
    /// The request's server span.
    let server: SpanContext
    /// The app's `tracestate` (its fields joined), kept only under the app's own parent.
    let traceState: String?
    /// When the request's head was complete, nanoseconds since 1970.
    let startNanos = Tracer.nowNanos()
    /// The attempt under way (`spanID` 0 when none is open), its number and start.
    private var attempt = SpanContext(traceID: TraceID(high: 0, low: 0), spanID: SpanID(0), sampled: false)
    private var attempts: UInt64 = 0
    private var attemptStartNanos: UInt64 = 0
    private var events: [SpanEvent] = []
    private var links: [SpanLink] = []
    private var waitStartNanos: UInt64?
    private var waitedNanos: UInt64 = 0

    /// Starts tracing `io`'s request: its propagation always, a recording when it is sampled.
    /// Out of line, like every entry the session calls: inlined into the session's hot paths,
    /// even code behind a nil check costs untraced requests.
    @inline(never)
    static func begin(_ io: ExchangeIO, tracer: Tracer, ids: inout IDGenerator) {
        (io.propagation, io.trace) = start(io.head, tracer: tracer, ids: &ids)
    }

    /// The propagation of a request with `head`, and its recording when it is sampled: the
    /// app's `traceparent` (exactly one valid field) is the parent, its `tracestate` stays
    /// with the trace.
    static func start(_ head: borrowing RequestHead, tracer: Tracer, ids: inout IDGenerator) -> (TracePropagation, RequestTrace?) {
        let (parent, traceState) = appContext(head)
        let server = tracer.newSpan(parent: parent, ids: &ids)
        let propagation = TracePropagation(server: server, keepTraceState: parent != nil)
        guard server.sampled else { return (propagation, nil) }
        return (propagation, RequestTrace(tracer: tracer, parent: parent, server: server, traceState: traceState))
    }

    /// A sampled request's recording.
    init(tracer: Tracer, parent: SpanContext?, server: SpanContext, traceState: String?) {
        self.tracer = tracer
        self.parent = parent
        self.server = server
        self.traceState = traceState
    }

    /// The app's span (exactly one valid `traceparent`) and `tracestate` (its fields joined),
    /// read in place: only the two trace fields, never a String per field.
    static func appContext(_ head: borrowing RequestHead) -> (SpanContext?, String?) {
        head.withFieldSection { section -> (SpanContext?, String?) in
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
    }

    /// Attempt `number` (its span `context`) starts now.
    @inline(never)
    func attemptStarted(_ context: SpanContext, number: UInt64) {
        attempt = context
        attempts = number
        attemptStartNanos = Tracer.nowNanos()
    }

    /// The attempt under way ended: with the upstream's `status` when a head arrived, or
    /// `error` (a Proxy-Status error type) when it failed.
    func endAttempt(method: String, target: UpstreamTarget, path: String, status: Int?, error: String?) {
        guard attempt.spanID.isValid else { return }
        let context = attempt
        attempt.spanID = SpanID(0)
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
                              startNanos: attemptStartNanos, endNanos: Tracer.nowNanos(), attributes: attributes,
                              status: errorType.map { .error($0) } ?? .unset))
    }

    /// The attempt under way was answered 401: it is over, and the wait for a different token
    /// (the replay's) is the request's.
    @inline(never)
    func rejected(_ io: ExchangeIO) {
        tokenWaitStarted()
        endAttempt(method: io.head.method, target: io.target, path: ExchangeSession.pathWithoutQuery(io.head.target),
                   status: io.responseHead?.status, error: nil)
    }

    /// `io`'s request is sent again: a replay (a 401, a DPoP nonce) or a retry (a pooled
    /// connection closed first). Ends the attempt still open and says why on the server span.
    @inline(never)
    func resending(_ io: ExchangeIO, replay: Bool) {
        let status = io.responseHead?.status
        endAttempt(method: io.head.method, target: io.target, path: ExchangeSession.pathWithoutQuery(io.head.target), status: status,
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
        end(head: io.head, route: io.decision.routeName, credential: io.decision.credential?.name, target: io.target,
            status: status, error: error, placement: io.token == nil ? nil : io.decision.placementLabel)
    }

    /// The request is resent (`event`: `token_sidecar.replay` or `token_sidecar.retry`), and why.
    func resent(_ event: String, reason: String) {
        events.append(SpanEvent(timeNanos: Tracer.nowNanos(), name: event,
                                  attributes: [SpanAttribute("token_sidecar.reason", .string(reason))]))
    }

    /// The request starts waiting for a token.
    @inline(never)
    func tokenWaitStarted() {
        waitStartNanos = Tracer.nowNanos()
    }

    /// The wait ended with `token` (nil: none came); a token a fetch produced is linked.
    @inline(never)
    func tokenWaitEnded(_ token: AccessToken?) {
        if let start = waitStartNanos { waitedNanos += Tracer.nowNanos() &- start }
        waitStartNanos = nil
        if let fetch = token?.fetchSpan, !links.contains(where: { $0.context == fetch }) {
            links.append(SpanLink(context: fetch, attributes: [SpanAttribute("token_sidecar.link", .string("token fetch waited for"))]))
        }
    }

    /// The request was answered with `status` (`error`: the Proxy-Status error type when the
    /// proxy answered with an error): ends the open attempt and the server span.
    /// `placement`: where the injected token went, when one was.
    func end(head: borrowing RequestHead, route: String?, credential: String?, target: UpstreamTarget?, status: Int, error: String?,
             placement: String? = nil) {
        if let target, attempt.spanID.isValid {
            // A response ended without one of ours: its status is the upstream's.
            endAttempt(method: head.method, target: target, path: ExchangeSession.pathWithoutQuery(head.target),
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
            if let start = waitStartNanos { waitedNanos += Tracer.nowNanos() &- start }
            attributes.append(SpanAttribute("token_sidecar.token.wait", .double(Double(waitedNanos) / 1e9)))
        }
        if let placement { attributes.append(SpanAttribute("token_sidecar.placement", .string(placement))) }
        tracer.end(SpanRecord(context: server, traceState: traceState, parentSpanID: parent?.spanID, parentIsRemote: parent != nil,
                              name: head.method, kind: .server, startNanos: startNanos, endNanos: Tracer.nowNanos(),
                              attributes: attributes, events: events, links: links,
                              status: status >= 500 ? .error(errorType ?? String(status)) : .unset))
    }

    /// The server span of a request answered before any exchange (no route, a refused
    /// CONNECT, a loop), when tracing is on.
    static func refused(head: borrowing RequestHead, tracer: Tracer, ids: inout IDGenerator, status: Int, error: String?) {
        guard let trace = start(head, tracer: tracer, ids: &ids).1 else { return }
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
        attributes.append(SpanAttribute("url.path", .string(ExchangeSession.pathWithoutQuery(head.target))))
        if let authority {
            attributes.append(SpanAttribute("server.address", .string(authority.host)))
            if let port = authority.port { attributes.append(SpanAttribute("server.port", .int(Int64(port)))) }
        }
        attributes.append(SpanAttribute("network.protocol.version", .string(head.version == .http1_1 ? "1.1" : "1.0")))
        return attributes
    }

    private static func authority(_ target: UpstreamTarget) -> String {
        let host = target.host.utf8.contains(0x3A) ? "[\(target.host)]" : target.host
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
