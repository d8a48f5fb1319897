/// What a codec advertises and enforces on its side of a connection.
public struct HTTP2Settings: Equatable, Sendable {
    /// `SETTINGS_MAX_CONCURRENT_STREAMS`: streams the peer may open at once (more are refused
    /// with `REFUSED_STREAM`).
    public var maxConcurrentStreams: Int
    /// `SETTINGS_INITIAL_WINDOW_SIZE`: what each stream may receive before the consumer moved
    /// its bytes on. It bounds the memory one stream holds.
    public var streamWindow: Int
    /// The connection's receive window: what all streams together may hold unconsumed.
    public var connectionWindow: Int
    /// `SETTINGS_MAX_HEADER_LIST_SIZE`: the largest decoded header list taken (RFC 9113's
    /// accounting: name + value + 32 per field). A larger one resets its stream.
    public var maxHeaderListSize: Int
    /// Header blocks continued over more `CONTINUATION` frames than this end the connection
    /// (the CONTINUATION flood, CVE-2024-27316).
    public var maxContinuations: Int
    /// Most fields in one header list (as the HTTP/1.1 head's limit).
    public var maxHeaderFields: Int

    /// The proxy's defaults: 100 streams (as nginx and HAProxy advertise), 256 KiB per stream,
    /// 1 MiB per connection, 64 KiB and 100 fields per header list (the HTTP/1.1 head's limits),
    /// 8 continuations.
    public init(maxConcurrentStreams: Int = 100, streamWindow: Int = 256 * 1024, connectionWindow: Int = 1024 * 1024,
                maxHeaderListSize: Int = 64 * 1024, maxContinuations: Int = 8, maxHeaderFields: Int = 100) {
        self.maxConcurrentStreams = maxConcurrentStreams
        self.streamWindow = streamWindow
        self.connectionWindow = connectionWindow
        self.maxHeaderListSize = maxHeaderListSize
        self.maxContinuations = maxContinuations
        self.maxHeaderFields = maxHeaderFields
    }
}
