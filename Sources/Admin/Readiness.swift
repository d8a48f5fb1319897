import JSON
/// Whether the sidecar is ready for traffic, and if not, what is missing.
public struct Readiness: Sendable, Equatable {
    /// True when every required credential has a usable token (and whatever else readiness needs).
    public var ready: Bool
    /// Human-readable reasons when not ready, e.g.
    /// `"credential partner: no valid token (last error: connection refused)"`. Never secrets.
    public var missing: [String]

    /// Creates a readiness report.
    public init(ready: Bool, missing: [String] = []) {
        self.ready = ready
        self.missing = missing
    }

    /// The JSON body `/readyz` answers with.
    var json: JSONValue {
        ready ? .object([("ready", .bool(true))])
            : .object([("ready", .bool(false)), ("missing", .array(missing.map { .string($0) }))])
    }
}
