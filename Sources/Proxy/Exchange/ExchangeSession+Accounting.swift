import EventLoop
import HTTP1
import Logging

/// Metrics and the access log: one record per answered request.
extension ExchangeSession {
    /// Counts the exchange's request and writes its access-log line (never the query string,
    /// never a token: only its fingerprint). Reads the head in place: a copy of a head costs
    /// a retain and a release per field.
    func account(_ io: ExchangeIO, status: Int, error: String?) {
        Self.account(io, context: context, status: status, error: error, http2: isHTTP2Stream)
    }

    /// ``account(_:status:error:)`` for an exchange that outlived its session (an upgraded
    /// connection's, when its tunnel ends): `bytesIn` and `bytesOut` replace the bodies' sizes.
    /// `http2`: the request came on a stream of an app's HTTP/2 connection.
    static func account(_ io: ExchangeIO, context: WorkerContext, status: Int, error: String?,
                        bytesIn: Int? = nil, bytesOut: Int? = nil, http2: Bool = false) {
        let seconds = Double(Timer.monotonicNow() &- io.startedAt) / 1e9
        let route = io.decision.routeName ?? "unrouted"
        if let trace = io.trace { trace.finish(io, status: status, error: error) }
        count(route: route, status: status, error: error, seconds: seconds, context: context, http2: http2, decision: io.decision)
        if let injection = io.decision.injection, io.token != nil {
            context.metrics.injectionTally.count(InjectionCounterKey(route: route, placement: injection.label))
        }
        if io.rules != nil || io.decision.limits != nil || (context.auditLog != nil && io.decision.credential != nil) {
            audit(io, route: route, status: status, http2: http2, bytesIn: bytesIn, bytesOut: bytesOut, context: context)
        }
        guard context.accessLog else { return }
        logAccess(io.head, io: io, http2: http2, route: route, status: status, error: error, seconds: seconds,
                  context: context, bytesIn: bytesIn, bytesOut: bytesOut)
    }

    /// Counts a request answered before any exchange started (malformed head, no route, loop,
    /// the route's policy), and logs it when its head parsed.
    func account(_ head: RequestHead?, status: Int, error: String?, route: String = "unrouted") {
        guard let head else {
            // A request rejected before its head parsed: counted, but there is nothing to log.
            Self.count(route: route, status: status, error: error, seconds: nil, context: context, http2: isHTTP2Stream)
            return
        }
        Self.count(route: route, status: status, error: error, seconds: 0, context: context, http2: isHTTP2Stream)
        if let tracer = context.tracer {
            RequestTrace.refused(head: head, tracer: tracer, ids: &context.traceIDs, status: status, error: error)
        }
        guard context.accessLog else { return }
        Self.logAccess(head, io: nil, http2: isHTTP2Stream, route: route, status: status, error: error, seconds: 0,
                       context: context)
    }

    /// Counts one answered request; with the exchange's `decision`, keyed by it: a route's
    /// requests with one status make no key (no String retained and released).
    private static func count(route: String, status: Int, error: String?, seconds: Double?, context: WorkerContext,
                              http2: Bool, decision: RouteDecision? = nil) {
        if let decision {
            context.metrics.requestTally.count(for: decision, status &* 2 &+ (http2 ? 1 : 0)) {
                RequestCounterKey(route: route, code: status, http2: http2)
            }
        } else {
            context.metrics.requestTally.count(RequestCounterKey(route: route, code: status, http2: http2))
        }
        if let seconds { context.metrics.duration.observe(seconds) }
        if let error { context.metrics.upstreamErrors[error, default: 0] += 1 }
    }

    /// `http2`: the request came on an HTTP/2 stream (its head, translated, says HTTP/1.1).
    private static func logAccess(_ head: RequestHead, io: ExchangeIO?, http2: Bool, route: String, status: Int, error: String?,
                                  seconds: Double, context: WorkerContext, bytesIn: Int? = nil, bytesOut: Int? = nil) {
        let protocolName = http2 ? "HTTP/2" : head.version.description
        let bytesIn = bytesIn ?? Int(io?.requestRelay.bodyBytes ?? 0)
        let bytesOut = bytesOut ?? Int(io?.responseRelay.bodyBytes ?? 0)
        if let writer = context.accessLogWriter {
            let upstream = io.map { "\($0.target.host):\($0.target.port)" }
            writer.write(AccessRecord(
                method: head.method, authority: Self.authority(head), path: Self.pathWithoutQuery(head.target),
                status: status, bytesIn: bytesIn, bytesOut: bytesOut,
                durationMs: Int((seconds * 1000).rounded()), route: route, upstream: upstream,
                tokenFingerprint: io?.token?.fingerprint, auth: Self.authorizationUse(io),
                proxyStatus: error, worker: context.worker, scope: io?.variant?.scope, protocolName: protocolName,
                placement: io?.token == nil ? nil : io?.decision.placementLabel))
            return
        }
        var metadata: Logger.Metadata = [
            "auth": .string(Self.authorizationUse(io).rawValue),
            "method": .string(head.method),
            "authority": .string(Self.authority(head)),
            "path": .string(Self.pathWithoutQuery(head.target)),
            "protocol": .string(protocolName),
            "status": .stringConvertible(status),
            "bytes_in": .stringConvertible(bytesIn),
            "bytes_out": .stringConvertible(bytesOut),
            "duration_ms": .string(String(Int((seconds * 1000).rounded()))),
            "route": .string(route),
        ]
        if let target = io?.target { metadata["upstream"] = .string("\(target.host):\(target.port)") }
        if let token = io?.token {
            metadata["token"] = .string(token.fingerprint)
            if let placement = io?.decision.placementLabel { metadata["placement"] = .string(placement) }
        }
        if let scope = io?.variant?.scope { metadata["scope"] = .string(scope) }
        if let error { metadata["proxy_status"] = .string(error) }
        context.logger.info("access", metadata: metadata)
    }

    /// What happened to the request's `Authorization`, for the access log.
    private static func authorizationUse(_ io: ExchangeIO?) -> AuthorizationUse {
        if io?.token != nil { return io?.decision.perRequest?.exchanges == true ? .exchanged : .injected }
        return io?.decision.keptClientAuthorization == true ? .kept : .none
    }

    static func authority(_ head: borrowing RequestHead) -> String {
        switch head.target {
        case .absolute(_, let authority, _): return authority.description
        case .authority(let authority): return authority.description
        case .origin, .asterisk: return head.host?.description ?? "-"
        }
    }

    /// The request target's path without its query (a query may carry secrets).
    static func pathWithoutQuery(_ target: RequestTarget) -> String {
        let full: String
        switch target {
        case .origin(let path): full = path
        case .absolute(_, _, let path): full = path
        case .authority(let authority): return authority.description
        case .asterisk: return "*"
        }
        if let query = full.firstIndex(of: "?") { return String(full[..<query]) }
        return full
    }
}
