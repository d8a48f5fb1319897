import Config

/// Which protocols a route's requests may switch to (RFC 9110 §7.8) and how long an upgraded
/// connection may last: `websocket` always, others when the route lists them (`upgrades:`);
/// `maxUpgradedLifetime`.
struct UpgradePolicy: Sendable, Equatable {
    /// Listed protocols besides `websocket` (lowercase, no version).
    let others: [String]
    /// How long an upgraded connection may last; nil: as long as both sides keep it open.
    let lifetime: Duration?

    /// WebSocket only, for as long as it lasts (unrouted forwarding, tests).
    init(others: [String] = [], lifetime: Duration? = nil) {
        self.others = others
        self.lifetime = lifetime
    }

    /// A route's settings.
    init(_ route: RouteConfig) {
        self.init(others: route.upgrades, lifetime: route.maxUpgradedLifetime)
    }

    /// Whether `protocolName` (``UpgradeProtocol/name``: lowercase, no version) may go on.
    func allows(_ protocolName: String) -> Bool {
        protocolName == "websocket" || others.contains(protocolName)
    }
}
