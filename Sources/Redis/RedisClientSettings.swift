import EventLoop

/// Where and how a ``RedisClient`` connects.
public struct RedisClientSettings: @unchecked Sendable {
    // @unchecked: TLSClientContext is itself safe to share (see its documentation).
    /// Host name or IP address.
    public var host: String
    /// TCP port.
    public var port: Int
    /// TLS (`rediss://`), verified per the context; nil for plain TCP.
    public var tls: TLSClientContext?
    /// ACL user for `AUTH user password`; nil sends `AUTH password` (when a password is set).
    public var username: String?
    /// Password for `AUTH`; nil sends no `AUTH`.
    public var password: String?
    /// Database for `SELECT` (0: none sent).
    public var database: Int
    /// The longest one command may wait for its reply.
    public var timeout: Duration
    /// First wait before reconnecting after a failure; doubles up to ``maxReconnectDelay``.
    public var reconnectDelay: Duration
    /// Longest wait before reconnecting.
    public var maxReconnectDelay: Duration

    /// Creates settings.
    public init(host: String, port: Int, tls: TLSClientContext? = nil, username: String? = nil, password: String? = nil,
                database: Int = 0, timeout: Duration = .milliseconds(250), reconnectDelay: Duration = .milliseconds(100),
                maxReconnectDelay: Duration = .seconds(2)) {
        self.host = host
        self.port = port
        self.tls = tls
        self.username = username
        self.password = password
        self.database = database
        self.timeout = timeout
        self.reconnectDelay = reconnectDelay
        self.maxReconnectDelay = maxReconnectDelay
    }
}
