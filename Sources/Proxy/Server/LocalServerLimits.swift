/// Bounds a ``LocalServer`` enforces on every connection.
public struct LocalServerLimits: Sendable {
    /// Largest request head (request line and fields); beyond it the answer is 431.
    public var maxHeadBytes: Int
    /// Most header field lines; beyond it the answer is 431.
    public var maxFields: Int
    /// Largest request body; beyond it the answer is 413 and the connection closes.
    public var maxBodyBytes: Int
    /// A connection with no bytes arriving for this long is closed (idle keep-alive, or a
    /// client that stalls mid-request).
    public var idleTimeout: Duration
    /// Most simultaneous connections; further ones are closed as soon as they are accepted.
    public var maxConnections: Int

    /// Defaults sized for an admin or demo endpoint: 16 KiB heads, 1 MiB bodies, 30 s idle,
    /// 256 connections.
    public init(maxHeadBytes: Int = 16 * 1024, maxFields: Int = 100, maxBodyBytes: Int = 1024 * 1024,
                idleTimeout: Duration = .seconds(30), maxConnections: Int = 256) {
        self.maxHeadBytes = maxHeadBytes
        self.maxFields = maxFields
        self.maxBodyBytes = maxBodyBytes
        self.idleTimeout = idleTimeout
        self.maxConnections = maxConnections
    }
}
