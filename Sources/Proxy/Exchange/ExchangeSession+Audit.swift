import HTTP1

/// Audit records (issue 68): one per request on a route with rules or limits, one per request
/// that used a credential when `audit:` is configured, one per refusal of a route's policy; each
/// counted in
/// ``ProxyMetrics/policyDecisions``.
extension ExchangeSession {
    /// The record of a finished exchange.
    static func audit(_ io: ExchangeIO, route: String, status: Int, http2: Bool, bytesIn: Int?, bytesOut: Int?,
                      context: WorkerContext) {
        let reason = io.rules?.audited?.rawValue ?? io.overLimit?.rawValue
        let decision: AuditRecord.Decision = reason == nil ? .allowed : .audited
        context.metrics.policyTally.count(for: io.decision, decision == .allowed ? 0 : 1) {
            PolicyDecisionKey(route: route, credential: io.decision.credential?.name ?? "", decision: decision.rawValue)
        }
        guard let log = context.auditLog else { return }
        let credential = io.decision.credential?.name
        let head = io.head
        log.write(AuditRecord(
            route: route, credential: credential, placement: io.token == nil ? nil : io.decision.placementLabel,
            method: head.method, authority: authority(head), path: io.rulesPath ?? pathWithoutQuery(head.target),
            rule: io.rules?.rule.flatMap { index in io.decision.policy?.ruleName(index) }, decision: decision, reason: reason, status: status,
            bytesIn: bytesIn ?? Int(io.requestRelay.bodyBytes), bytesOut: bytesOut ?? Int(io.responseRelay.bodyBytes),
            traceID: io.trace?.server.traceID.hex ?? RequestTrace.appContext(head).0?.traceID.hex,
            protocolName: http2 ? "HTTP/2" : head.version.description))
    }

    /// The record of a request the route's rules or limits refused (nothing was forwarded):
    /// `reason` says why, `path` is the normalized one when there is one.
    func auditRefusal(_ head: borrowing RequestHead, _ decision: RouteDecision, error: ProxyError, reason: String, path: String?) {
        let route = decision.routeName ?? "unrouted"
        let credential = decision.credential?.name
        context.metrics.policyTally.count(PolicyDecisionKey(route: route, credential: credential ?? "",
                                                            decision: AuditRecord.Decision.denied.rawValue))
        guard let log = context.auditLog else { return }
        log.write(AuditRecord(
            route: route, credential: credential, placement: nil, method: head.method, authority: Self.authority(head),
            path: path ?? Self.pathWithoutQuery(head.target), rule: nil, decision: .denied, reason: reason,
            status: error.status, traceID: RequestTrace.appContext(head).0?.traceID.hex,
            protocolName: isHTTP2Stream ? "HTTP/2" : head.version.description))
    }
}
