/// How loaded an app's HTTP/2 connection is, shared by the connection (``HTTP2ServerSession``,
/// which keeps it current) with its streams' sessions, which ask on every upstream read and
/// response step whether their connection is busy (``ExchangeSession/isStreamOfBusyHTTP2Connection``).
/// A reference of their own, not a weak one to the connection: loading a weak reference cost
/// about 45 instructions and a retain and release, six times per stream. It holds no reference
/// back, so sharing it makes no cycle. Confined to the connection's loop. The streams' sessions
/// also ask it whether their connection is still there.
final class HTTP2ConnectionLoad {
    /// Streams the connection has open.
    var openStreams = 0
    /// A stream of the connection was refused because the worker served its limit.
    var refusedForWorkerLimit = false
    /// The connection is gone (deinitialized): its streams no longer reach it
    /// (``HTTP2StreamSession/owner``).
    var connectionGone = false

    /// Whether the connection has more streams open than ``HTTP2ServerSession/streamsAlwaysTaken``,
    /// or asked for more than the full worker took: its streams queue for upstream connections
    /// behind other clients' requests.
    var hasManyStreams: Bool { openStreams > HTTP2ServerSession.streamsAlwaysTaken || refusedForWorkerLimit }

    /// The connection closed: none of its streams is counted any more.
    func connectionClosed() {
        openStreams = 0
        refusedForWorkerLimit = false
    }
}
