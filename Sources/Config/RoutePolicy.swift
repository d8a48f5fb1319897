/// What a route allows an app to do with its credential (`routes[].rules`, `enforcement`): the
/// first rule whose methods and paths match the request allows it; once a route has rules,
/// anything else is denied (or, with `enforcement: audit`, recorded as denied and let through).
/// Immutable and behind one reference: the router copies a route per request.
public final class RoutePolicy: Sendable, Equatable {
    /// The rules, in the order written.
    public let rules: [RouteRule]
    /// Whether a denial is enforced or only recorded.
    public let enforcement: Enforcement

    /// The rules as requests are matched against them.
    private let compiled: CompiledRules

    /// A policy of `rules`.
    public init(rules: [RouteRule], enforcement: Enforcement = .enforce) {
        self.rules = rules
        compiled = CompiledRules(rules)
        self.enforcement = enforcement
    }

    /// The decision for `method` on the normalized `path` (``HTTP1/PathNormalization``).
    public func decide(method: String, path: String) -> RuleDecision {
        var path = path
        return path.withUTF8 { firstAllowing(method: method, path: $0) }.map { .allowed(rule: ruleName($0)) } ?? .denied
    }

    /// The index in ``rules`` of the first rule allowing `method` on the normalized path whose
    /// bytes are `path`, nil when none does: what a request is decided with (no String made).
    public func firstAllowing(method: String, path: UnsafeBufferPointer<UInt8>) -> Int? {
        compiled.firstAllowing(method: method, path: path)
    }

    /// The name of the rule at `index` in ``rules``.
    public func ruleName(_ index: Int) -> String {
        compiled.name(of: index)
    }

    public static func == (lhs: RoutePolicy, rhs: RoutePolicy) -> Bool {
        lhs.rules == rhs.rules && lhs.enforcement == rhs.enforcement
    }
}

/// `routes[].rules[]`: `{name, methods: [GET, HEAD], paths: ["/v1/orders/**"]}`. No `methods`:
/// any method; no `paths`: any path (at least one of them is given).
public struct RouteRule: Sendable, Equatable {
    /// What audit records and denials call it.
    public var name: String
    /// The methods it allows, uppercase (empty: any).
    public var methods: [String]
    /// The paths it allows (empty: any).
    public var paths: [PathPattern]

    /// A rule.
    public init(name: String, methods: [String] = [], paths: [PathPattern] = []) {
        self.name = name
        self.methods = methods
        self.paths = paths
    }

    /// Whether it allows `method` on the normalized `path`.
    public func allows(method: String, path: String) -> Bool {
        allows(method: method, segments: PathPattern.segments(of: path))
    }

    /// Whether it allows `method` on a normalized path split by ``PathPattern/segments(of:)``.
    public func allows(method: String, segments: [Substring]) -> Bool {
        (methods.isEmpty || methods.contains(method)) && (paths.isEmpty || paths.contains { $0.matches(segments: segments) })
    }
}

/// `enforcement:` of a route (or of the whole configuration).
public enum Enforcement: String, Sendable, Equatable, CaseIterable {
    /// A denied request is refused (403, nothing forwarded).
    case enforce
    /// Decisions are computed and recorded, never enforced: how a policy is rolled out.
    case audit
}

/// What a route's rules decided.
public enum RuleDecision: Sendable, Equatable {
    /// The named rule allows it.
    case allowed(rule: String)
    /// No rule allows it.
    case denied
}
