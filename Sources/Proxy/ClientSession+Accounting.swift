import HTTP1
import Logging

/// Metrics and the access log: one record per answered request.
extension ClientSession {
    /// Counts the request and writes its access-log line (never the query string, never a token:
    /// only its fingerprint).
    func account(_ head: RequestHead?, io: ExchangeIO?, status: Int, error: String?) {
        guard let head else {
            // A request rejected before its head parsed: counted, but there is nothing to log.
            context.metrics.requests[RequestCounterKey(route: "unrouted", code: status), default: 0] += 1
            if let error { context.metrics.upstreamErrors[error, default: 0] += 1 }
            return
        }
        let seconds = io.map { Self.seconds(ContinuousClock.now - $0.startedAt) } ?? 0
        let decision = io?.decision
        let route = decision?.routeName ?? "unrouted"
        context.metrics.requests[RequestCounterKey(route: route, code: status), default: 0] += 1
        context.metrics.duration.observe(seconds)
        if let error { context.metrics.upstreamErrors[error, default: 0] += 1 }
        guard context.accessLog else { return }
        var metadata: Logger.Metadata = [
            "method": .string(head.method),
            "authority": .string(Self.authority(head)),
            "path": .string(Self.pathWithoutQuery(head.target)),
            "status": .stringConvertible(status),
            "bytes_in": .stringConvertible(io?.requestRelay.bodyBytes ?? 0),
            "bytes_out": .stringConvertible(io?.responseRelay.bodyBytes ?? 0),
            "duration_ms": .string(String(Int((seconds * 1000).rounded()))),
            "route": .string(route),
        ]
        if let decision { metadata["upstream"] = .string("\(decision.target.host):\(decision.target.port)") }
        if let token = io?.token { metadata["token"] = .string(token.fingerprint) }
        if let error { metadata["proxy_status"] = .string(error) }
        context.logger.info("access", metadata: metadata)
    }

    private static func seconds(_ duration: Duration) -> Double {
        let (s, atto) = duration.components
        return Double(s) + Double(atto) / 1e18
    }

    private static func authority(_ head: RequestHead) -> String {
        switch head.target {
        case .absolute(_, let authority, _): return authority.description
        case .authority(let authority): return authority.description
        case .origin, .asterisk: return head.host?.description ?? "-"
        }
    }

    private static func pathWithoutQuery(_ target: RequestTarget) -> String {
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
