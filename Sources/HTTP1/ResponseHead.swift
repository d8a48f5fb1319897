/// A parsed status line and header section.
public struct ResponseHead: Sendable {
    /// The protocol version of the response.
    public var version: HTTPVersion
    /// The status code, 100...599.
    public var status: Int
    /// The reason phrase (may be empty).
    public var reason: String
    /// All header field lines, in order.
    public var fields: HTTPFields
    /// How the body is delimited (RFC 9112 §6.3).
    public var framing: BodyFraming
    /// Whether the connection may be reused; always false with `.untilClose` framing.
    public var keepAlive: Bool

    /// Memberwise initializer.
    public init(
        version: HTTPVersion, status: Int, reason: String, fields: HTTPFields,
        framing: BodyFraming, keepAlive: Bool
    ) {
        self.version = version
        self.status = status
        self.reason = reason
        self.fields = fields
        self.framing = framing
        self.keepAlive = keepAlive
    }
}
