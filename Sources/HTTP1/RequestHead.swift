/// A parsed request line and header section.
public struct RequestHead: Sendable {
    /// The method token, case preserved (methods are case-sensitive, RFC 9110 §9.1).
    public var method: String
    /// The request target.
    public var target: RequestTarget
    /// The protocol version.
    public var version: HTTPVersion
    /// All header field lines, in order.
    public var fields: HTTPFields
    /// `.none`, `.contentLength(n)` or `.chunked`; never `.untilClose` (RFC 9112 §6.3 item 7).
    public var framing: BodyFraming
    /// The parsed Host field; nil only for an HTTP/1.0 request without Host.
    public var host: Authority?
    /// Whether the connection may be reused after this exchange (RFC 9112 §9.3).
    public var keepAlive: Bool
    /// True when the request carries `Expect: 100-continue` (RFC 9110 §10.1.1).
    public var expectsContinue: Bool

    /// Memberwise initializer.
    public init(
        method: String, target: RequestTarget, version: HTTPVersion, fields: HTTPFields,
        framing: BodyFraming, host: Authority?, keepAlive: Bool, expectsContinue: Bool
    ) {
        self.method = method
        self.target = target
        self.version = version
        self.fields = fields
        self.framing = framing
        self.host = host
        self.keepAlive = keepAlive
        self.expectsContinue = expectsContinue
    }
}
