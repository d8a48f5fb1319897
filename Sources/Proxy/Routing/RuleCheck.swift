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
        /// The index of the rule that allowed it in the policy's rules (nil: none did; the
        /// route only audits).
        let rule: Int?
        /// The head with the normalized path, when it differs from what the app sent (enforced only).
        let editedTarget: RequestTarget?
        /// The normalized path (no query), for the audit record, when it differs from the path as
        /// sent (nil: the same, or refused as ambiguous).
        let path: String?
        /// Why the rules would have refused it, when the route only audits.
        var audited: Reason? = nil

        /// What the exchange keeps for its audit record: plain values, copied for free.
        var recorded: Recorded { Recorded(rule: rule, audited: audited) }
    }

    /// What an exchange keeps of its ``Outcome`` (its path, when normalized, kept beside it).
    struct Recorded: Equatable {
        /// The index of the rule that allowed it in the policy's rules (nil: none did).
        let rule: Int?
        /// Why the rules would have refused it, when the route only audits.
        let audited: Reason?
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
        var full: String
        // CONNECT's and `OPTIONS *`'s targets are checked, and recorded, as `/`.
        let recordedInHead: Bool
        switch head.target {
        case .origin(let path), .absolute(_, _, let path): (full, recordedInHead) = (path, true)
        case .authority, .asterisk: (full, recordedInHead) = ("/", false)
        }
        let method = head.method
        let enforced = policy.enforcement == .enforce
        // Most paths are already normal: matched in place, nothing copied (.some(nil): no rule
        // allows it; nil: it needs normalizing first).
        let inPlace: Int?? = full.withUTF8 { bytes in
            let path = UnsafeBufferPointer(rebasing: bytes[..<(bytes.firstIndex(of: 0x3F) ?? bytes.count)])
            guard PathNormalization.isNormal(path) else { return nil }
            return .some(policy.firstAllowing(method: method, path: path))
        }
        if let inPlace {
            return decided(inPlace, recorded: recordedInHead ? nil : "/", edited: nil, method: method, route: route, enforced: enforced,
                           checked: String(decoding: full.utf8.prefix { $0 != 0x3F }, as: UTF8.self))
        }
        let mark = full.utf8.firstIndex(of: 0x3F)
        let rawPath = mark.map { full[..<$0] } ?? full[...]
        let normalized: String
        switch PathNormalization.normalize(rawPath) {
        case .refused(let why):
            guard enforced else { return .success(Outcome(rule: nil, editedTarget: nil, path: nil, audited: .ambiguousPath)) }
            return .failure(Refusal(error: ProxyError(status: 400, type: "http_request_error", message: "route \(route): \(why)"),
                                    reason: .ambiguousPath, path: nil))
        case .normalized(let path):
            normalized = path
        }
        let changed = rawPath != normalized
        var bytes = normalized
        return decided(bytes.withUTF8 { policy.firstAllowing(method: method, path: $0) }, recorded: changed ? normalized : nil,
                       edited: enforced && changed ? edited(head.target, normalized, mark.map { full[$0...] }) : nil,
                       method: method, route: route, enforced: enforced, checked: normalized)
    }

    /// The outcome of a decided request: allowed by `rule`, or else audited or refused for its
    /// `checked` path. `recorded`: the path for the audit record when it is not the head's.
    private static func decided(_ rule: Int?, recorded: String?, edited: RequestTarget?, method: String, route: String, enforced: Bool,
                                checked: @autoclosure () -> String) -> Result<Outcome, Refusal> {
        if let rule { return .success(Outcome(rule: rule, editedTarget: edited, path: recorded)) }
        guard enforced else { return .success(Outcome(rule: nil, editedTarget: nil, path: recorded, audited: .noRule)) }
        let path = checked()
        return .failure(Refusal(error: .denied("route \(route): no rule allows \(method) \(path)"), reason: .noRule, path: path))
    }

    /// `target` with the `normalized` path (the query kept).
    private static func edited(_ target: RequestTarget, _ normalized: String, _ query: Substring?) -> RequestTarget? {
        let path = normalized + (query.map(String.init) ?? "")
        switch target {
        case .origin: return .origin(path)
        case .absolute(let scheme, let authority, _): return .absolute(scheme: scheme, authority: authority, path: path)
        case .authority, .asterisk: return nil
        }
    }
}
