import EventLoop
import Glibc

/// The limits a request of one route is held to: the route's own and its credential's (shared
/// by every route using that credential). Both must admit it; a refusal by the credential's
/// gives back what the route's took.
final class RouteLimits: Sendable {
    /// `routes[].limits`.
    let route: RequestLimiter?
    /// `credentials.NAME.limits`.
    let credential: RequestLimiter?
    /// Whether a refusal is enforced (429) or only recorded: the route's `enforcement` (its own
    /// or the top-level one) covers its limits as it covers its rules.
    let enforced: Bool

    /// Limits of a route (nil when neither has any: ``make(route:credential:enforced:)``).
    private init(route: RequestLimiter?, credential: RequestLimiter?, enforced: Bool) {
        self.route = route
        self.credential = credential
        self.enforced = enforced
    }

    /// The limits, or nil when there are none.
    static func make(route: RequestLimiter?, credential: RequestLimiter?, enforced: Bool) -> RouteLimits? {
        route == nil && credential == nil ? nil : RouteLimits(route: route, credential: credential, enforced: enforced)
    }

    /// Admits one request now or says which limit refuses it.
    func admit() -> LimitVerdict {
        let now = Timer.monotonicNow()
        let wall = time(nil)
        if let route {
            let verdict = route.admit(now: now, wall: wall)
            if verdict != .admitted { return verdict }
        }
        if let credential {
            let verdict = credential.admit(now: now, wall: wall)
            if verdict != .admitted {
                route?.refund(wall: wall)
                return verdict
            }
        }
        return .admitted
    }
}
