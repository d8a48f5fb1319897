/// A protocol named in an `Upgrade` field (RFC 9110 §7.8): `websocket`, `h2c`, `foo/2`.
public struct UpgradeProtocol: Equatable, Sendable {
    /// The name, lowercase, without its version: what a policy compares.
    public let name: String
    /// As it was sent (name and version, case kept): what goes on in `Upgrade`.
    public let text: String

    /// A protocol `name` (lowercase) sent as `text`.
    public init(name: String, text: String) {
        self.name = name
        self.text = text
    }
}
