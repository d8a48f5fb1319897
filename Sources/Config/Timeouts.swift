/// Process-wide timeouts (`timeouts:`); every one is greater than zero.
public struct Timeouts: Sendable, Equatable {
    /// Establishing a TCP (and TLS) connection to an upstream or token server (default 5s).
    public var connect: Duration
    /// Waiting for an upstream's response headers after the request was sent (default 60s).
    public var responseHeaders: Duration
    /// Receiving a client's complete request head (default 10s).
    public var clientHeader: Duration
    /// A client connection with no request in progress (default 60s).
    public var idle: Duration
    /// A pooled upstream connection with no request in progress (default 30s).
    public var upstreamIdle: Duration
    /// No body bytes moving in either direction during an exchange (default 60s).
    public var bodyIdle: Duration
    /// An upgraded connection (a WebSocket after its `101`) with no byte in either direction
    /// (default 1h): long-lived connections are quiet for long, so not `idle`.
    public var upgradedIdle: Duration

    /// Creates timeouts; every parameter defaults to the loader's default.
    public init(
        connect: Duration = .seconds(5),
        responseHeaders: Duration = .seconds(60),
        clientHeader: Duration = .seconds(10),
        idle: Duration = .seconds(60),
        upstreamIdle: Duration = .seconds(30),
        bodyIdle: Duration = .seconds(60),
        upgradedIdle: Duration = .seconds(3600)
    ) {
        self.connect = connect
        self.responseHeaders = responseHeaders
        self.clientHeader = clientHeader
        self.idle = idle
        self.upstreamIdle = upstreamIdle
        self.bodyIdle = bodyIdle
        self.upgradedIdle = upgradedIdle
    }

    /// The loader's defaults.
    public static let `default` = Timeouts()
}
