import Yams

extension ConfigDecoder {
    /// Highest `rate.perSecond` (a million requests per second is no limit at all).
    static let maxPerSecond = 1_000_000.0
    /// One a day: slower rates would wait longer than any Retry-After or store expiry can say.
    static let minPerSecond = 1.0 / 86_400

    /// `limits: {rate: {perSecond, burst}, budget: {requests, per}}` of a route or a credential;
    /// nil when absent. `valid` is false when anything was reported.
    mutating func decodeLimits(_ node: Node?, path: String) -> (limits: LimitsConfig?, valid: Bool) {
        guard let node, !Self.isNull(node) else { return (nil, true) }
        guard let entries = mapping(node, path: path, expected: "a mapping with rate, budget or both") else { return (nil, false) }
        checkKeys(entries, allowed: ConfigKeys.limits, path: path)
        var valid = !entries.contains { !ConfigKeys.limits.contains($0.key) }
        let fields = Self.index(entries)
        var limits = LimitsConfig()
        if let rateNode = fields["rate"], !Self.isNull(rateNode) {
            let ratePath = Self.join(path, "rate")
            if let rate = mapping(rateNode, path: ratePath, expected: "a mapping {perSecond: N, burst: M}") {
                checkKeys(rate, allowed: ConfigKeys.limitsRate, path: ratePath)
                let inner = Self.index(rate)
                let perSecond = positiveNumber(inner["perSecond"], path: Self.join(ratePath, "perSecond"), at: rateNode)
                var burst: Int?
                if inner["burst"] != nil {
                    burst = boundedInt(inner["burst"], path: Self.join(ratePath, "burst"), range: 1...1_000_000)
                    if burst == nil { valid = false }
                }
                if let perSecond { limits.rate = LimitsConfig.Rate(perSecond: perSecond, burst: burst) } else { valid = false }
            } else {
                valid = false
            }
        }
        if let budgetNode = fields["budget"], !Self.isNull(budgetNode) {
            let budgetPath = Self.join(path, "budget")
            if let budget = mapping(budgetNode, path: budgetPath, expected: "a mapping {requests: N, per: minute|hour|day}") {
                checkKeys(budget, allowed: ConfigKeys.limitsBudget, path: budgetPath)
                let inner = Self.index(budget)
                var requests: Int?
                if inner["requests"] == nil {
                    report(Self.join(budgetPath, "requests"), "required: how many requests each period admits", at: budgetNode)
                } else {
                    requests = boundedInt(inner["requests"], path: Self.join(budgetPath, "requests"), range: 1...Int(Int32.max))
                }
                var period: LimitsConfig.Period?
                switch choice(inner["per"], path: Self.join(budgetPath, "per"), as: LimitsConfig.Period.self) {
                case .absent: report(Self.join(budgetPath, "per"), "required: minute, hour or day", at: budgetNode)
                case .invalid: break
                case .value(let chosen): period = chosen
                }
                if let requests, let period { limits.budget = LimitsConfig.Budget(requests: requests, per: period) } else { valid = false }
            } else {
                valid = false
            }
        }
        if valid && limits.rate == nil && limits.budget == nil {
            report(path, "give rate, budget or both (e.g. rate: {perSecond: 50, burst: 100})", at: node)
            valid = false
        }
        return (valid ? limits : nil, valid)
    }

    /// A number ≥ ``minPerSecond`` and ≤ ``maxPerSecond`` (reported otherwise, or when absent).
    private mutating func positiveNumber(_ node: Node?, path: String, at parent: Node) -> Double? {
        guard let node else {
            report(path, "required: requests per second (a number, e.g. 50 or 0.5)", at: parent)
            return nil
        }
        guard case .value(let text) = string(node, path: path) else { return nil }
        guard let value = Double(text), value.isFinite, value >= Self.minPerSecond, value <= Self.maxPerSecond else {
            report(path, "expected a number from 0.0000116 (one a day) to \(Int(Self.maxPerSecond)), got '\(text)'", at: node)
            return nil
        }
        return value
    }
}
