import EventLoop
import HTTP2

/// A worker's HTTP/2 connections to upstreams (`upstreamProtocol: h2` or `h2c`), by pool key:
/// every exchange for a target shares them, a new one opening only when each is at the peer's
/// `SETTINGS_MAX_CONCURRENT_STREAMS` or going away.
///
/// What the ``UpstreamPool`` lends an exchange for such a target is an ``HTTP2UpstreamLease``
/// — whose each request becomes a stream on one of these connections —
/// so the pool's state machine still decides how many exchanges run at once and queues the
/// rest, as for HTTP/1.1. The sockets themselves are dialled through the pool too (resolution,
/// the address race, TLS and its verification, the connect timeout), then handed over.
///
/// Confined to its worker's loop.
final class HTTP2Upstreams {
    let loop: EventLoop
    private unowned let pool: UpstreamPool
    /// How long a connection with no stream stays open.
    var idleTimeout: Duration
    /// How long a new connection's upstream may take to acknowledge its `SETTINGS` (the connect
    /// timeout): past it, the connection takes no new stream (``HTTP2UpstreamConnection``).
    var settingsTimeout: Duration
    private var connections: [String: [HTTP2UpstreamConnection]] = [:]
    /// Requests per connection after which an upstream said `GOAWAY`, by pool key (nginx's
    /// `keepalive_requests`, Envoy's `max_requests_per_connection`): later connections take
    /// no more than that, so that requests refused by one spread over several new ones rather
    /// than all being refused again by the next.
    private var requestLimits: [String: Int] = [:]

    /// nghttp2's allocator for these connections' sessions (nil: the C library's).
    let blocks: HTTP2BlockCache?

    init(pool: UpstreamPool, loop: EventLoop, idleTimeout: Duration, settingsTimeout: Duration, blocks: HTTP2BlockCache? = nil) {
        self.pool = pool
        self.blocks = blocks
        self.loop = loop
        self.idleTimeout = idleTimeout
        self.settingsTimeout = settingsTimeout
    }

    /// A connection to `target` with room for one more stream: an open or opening one, or a
    /// new one.
    func connection(for target: UpstreamTarget) -> HTTP2UpstreamConnection {
        // The last one chosen, while it has room: most binds are for the same target as the
        // last (a gRPC app's calls), and looking its key up hashed the String each time.
        if let last = lastChosen, last.hasRoom, last.target.poolKey == target.poolKey { return last }
        if let found = connections[target.poolKey]?.first(where: { $0.hasRoom }) {
            lastChosen = found
            return found
        }
        let made = HTTP2UpstreamConnection(target: target, upstreams: self)
        connections[target.poolKey, default: []].append(made)
        made.dial(through: pool)
        lastChosen = made
        return made
    }

    /// The connection ``connection(for:)`` chose last (until it closes).
    private var lastChosen: HTTP2UpstreamConnection?

    /// Pool keys of `auto` targets whose upstream agreed on `h2`: their next exchanges go
    /// straight to HTTP/2.
    private var negotiatedHTTP2: Set<String> = []

    /// The `auto` target's key behind each HTTP/2 key made from one.
    private var negotiatedFrom: [String: String] = [:]

    /// A new connection for the HTTP/2 key `key` was refused `h2` in ALPN: an `auto` target
    /// behind it goes back to HTTP/1.1 (its server changed its mind).
    func refusedHTTP2(key: String) {
        guard let original = negotiatedFrom.removeValue(forKey: key) else { return }
        negotiatedHTTP2.remove(original)
    }

    /// Whether the `auto` target with `key` is known to speak HTTP/2.
    func speaksHTTP2(key: String) -> Bool { negotiatedHTTP2.contains(key) }

    /// An `auto` connection to `target` agreed on `h2`: its socket becomes an HTTP/2
    /// connection for ``UpstreamTarget/asHTTP2``, and the target is known to speak HTTP/2.
    func adopt(_ socket: any ByteStream, negotiatedFor target: UpstreamTarget) {
        if negotiatedHTTP2.count >= 1024 { negotiatedHTTP2.removeAll() }
        negotiatedHTTP2.insert(target.poolKey)
        let h2 = target.asHTTP2
        negotiatedFrom[h2.poolKey] = target.poolKey
        let made = HTTP2UpstreamConnection(target: h2, upstreams: self)
        connections[h2.poolKey, default: []].insert(made, at: 0)
        made.start(socket)
    }

    /// The streams an upstream allows at once (`SETTINGS_MAX_CONCURRENT_STREAMS`), by pool key,
    /// as its last connection's `SETTINGS` said: a new connection takes no more until its own
    /// `SETTINGS` come.
    private var streamLimits: [String: Int] = [:]

    /// What the last `SETTINGS` from `key`'s upstream allowed, once seen.
    func streamLimit(key: String) -> Int? { streamLimits[key] }

    /// A connection to `key` was told `streams` in its upstream's `SETTINGS` (the latest is kept:
    /// a server's limit may change with its configuration).
    func learn(streamLimit streams: Int, key: String) {
        if streamLimits[key] == nil && streamLimits.count >= 1024 { streamLimits.removeAll() }
        streamLimits[key] = streams
    }

    /// The requests a connection to `key` takes before the upstream ends it, once seen.
    func requestLimit(key: String) -> Int? { requestLimits[key] }

    /// An upstream ended a connection to `key` with `GOAWAY` (`NO_ERROR`) after `requests`.
    /// The largest seen is kept: a server shutting down early (a redeploy) must not make every
    /// later connection short.
    func learn(requestLimit requests: Int, key: String) {
        guard requests > 0 else { return }
        if requestLimits[key] == nil && requestLimits.count >= 1024 { requestLimits.removeAll() }
        requestLimits[key] = max(requestLimits[key] ?? 0, requests)
    }

    /// How many connections (open or opening) go to `key`.
    func count(key: String) -> Int { connections[key]?.count ?? 0 }

    /// A connection closed: it takes no more streams.
    func connectionClosed(_ connection: HTTP2UpstreamConnection) {
        if lastChosen === connection { lastChosen = nil }
        let key = connection.target.poolKey
        connections[key]?.removeAll { $0 === connection }
        if connections[key]?.isEmpty == true { connections[key] = nil }
    }

    /// Closes every connection (loop shutdown).
    func closeAll() {
        lastChosen = nil
        let all = connections.values.flatMap { $0 }
        connections.removeAll()
        for connection in all { connection.close(.endOfStream) }
    }
}
