import Config
import HTTP1

/// A request on a route with `rules:` (issue 68), decided from its head before any token is
/// looked up: the path normalized (``PathNormalization``), the route's policy asked, and — when
/// enforced — refused (400 for an ambiguous path, 403 when no rule allows it) or sent on with the
/// normalized path, so the upstream sees exactly what was checked. In audit mode nothing
/// changes: the decision is only reported.
enum RuleCheck {
    /// Why the rules did not allow a request (`reason` in audit records).
    enum Reason: String, Equatable {
        /// No rule allows its method and path.
        case noRule = "no_rule"
        /// Its path is ambiguous (``PathNormalization``).
        case ambiguousPath = "ambiguous_path"
    }

    /// What was decided for a request the route lets through.
    struct Outcome: Equatable {
        /// The rule that allowed it (nil: none did; the route only audits).
        let rule: String?
        /// The head with the normalized path, when it differs from what the app sent (enforced only).
        let editedTarget: RequestTarget?
        /// The normalized path (no query), for the audit record; nil when it was refused as ambiguous.
        let path: String?
        /// Why the rules would have refused it, when the route only audits.
        var audited: Reason? = nil
    }

    /// A request the route refuses: the answer, and what the audit record says.
    struct Refusal: Error, Equatable {
        /// The answer (400 or 403, with Proxy-Status).
        let error: ProxyError
        /// Why.
        let reason: Reason
        /// The normalized path; nil for an ambiguous one (the path as sent is recorded then).
        let path: String?
    }

    /// The decision for `head` on route `route` with `policy`.
    static func check(_ head: borrowing RequestHead, policy: RoutePolicy, route: String) -> Result<Outcome, Refusal> {
        let target = head.target
        let full: String
        switch target {
        case .origin(let path), .absolute(_, _, let path): full = path
        case .authority, .asterisk: full = "/"
        }
        let mark = full.utf8.firstIndex(of: 0x3F)
        let rawPath = mark.map { full[..<$0] } ?? full[...]
        let enforced = policy.enforcement == .enforce
        let normalized: String
        switch PathNormalization.normalize(rawPath) {
        case .refused(let why):
            guard enforced else { return .success(Outcome(rule: nil, editedTarget: nil, path: nil, audited: .ambiguousPath)) }
            return .failure(Refusal(error: ProxyError(status: 400, type: "http_request_error", message: "route \(route): \(why)"),
                                    reason: .ambiguousPath, path: nil))
        case .normalized(let path):
            normalized = path
        }
        switch policy.decide(method: head.method, path: normalized) {
        case .allowed(let rule):
            return .success(Outcome(rule: rule, editedTarget: enforced ? edited(target, rawPath, normalized, mark.map { full[$0...] }) : nil,
                                    path: normalized))
        case .denied:
            guard enforced else { return .success(Outcome(rule: nil, editedTarget: nil, path: normalized, audited: .noRule)) }
            return .failure(Refusal(error: .denied("route \(route): no rule allows \(head.method) \(normalized)"), reason: .noRule,
                                    path: normalized))
        }
    }

    /// `target` with `normalized` in place of `raw` (the query kept), or nil when they are the same.
    private static func edited(_ target: RequestTarget, _ raw: Substring, _ normalized: String, _ query: Substring?) -> RequestTarget? {
        guard raw != normalized else { return nil }
        let path = normalized + (query.map(String.init) ?? "")
        switch target {
        case .origin: return .origin(path)
        case .absolute(let scheme, let authority, _): return .absolute(scheme: scheme, authority: authority, path: path)
        case .authority, .asterisk: return nil
        }
    }
}
