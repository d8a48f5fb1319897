/// `limits:` of a route or a credential (issue 68): a rate (a token bucket) and a budget (so
/// many requests per calendar minute, hour or day, UTC). A request over either is refused with
/// 429 and `Retry-After`.
public struct LimitsConfig: Sendable, Equatable {
    /// `rate: {perSecond, burst}`: requests per second on average, up to `burst` at once.
    public struct Rate: Sendable, Equatable {
        /// Tokens added per second.
        public var perSecond: Double
        /// The bucket's size (and its content at start).
        public var burst: Int

        /// ``perSecond`` as written in a configuration: `50`, `0.5`.
        public var perSecondText: String {
            perSecond == perSecond.rounded() ? String(Int(perSecond)) : String(perSecond)
        }

        /// A rate; `burst` defaults to one second's worth (at least 1).
        public init(perSecond: Double, burst: Int? = nil) {
            self.perSecond = perSecond
            self.burst = burst ?? max(1, Int(perSecond.rounded(.up)))
        }
    }

    /// The period of a budget: a UTC calendar minute, hour or day.
    public enum Period: String, Sendable, Equatable, CaseIterable {
        /// 60 s, from second 0.
        case minute
        /// 3,600 s, from minute 0.
        case hour
        /// 86,400 s, from midnight UTC.
        case day

        /// Its length in seconds.
        public var seconds: Int {
            switch self {
            case .minute: return 60
            case .hour: return 3600
            case .day: return 86_400
            }
        }
    }

    /// `budget: {requests, per}`.
    public struct Budget: Sendable, Equatable {
        /// Requests admitted per period.
        public var requests: Int
        /// The period.
        public var per: Period

        /// A budget of `requests` per `per`.
        public init(requests: Int, per: Period) {
            self.requests = requests
            self.per = per
        }
    }

    /// The rate, if any.
    public var rate: Rate?
    /// The budget, if any.
    public var budget: Budget?

    /// Limits (at least one of them, for a configuration that decoded).
    public init(rate: Rate? = nil, budget: Budget? = nil) {
        self.rate = rate
        self.budget = budget
    }
}
