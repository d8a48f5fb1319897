import Config
import EventLoop
import Logging

/// What every client session on one worker loop shares: the loop, routing, the upstream pool,
/// a staging buffer, settings, and the set of live sessions. Confined to the loop's thread.
final class WorkerContext {
    /// Output bytes queued toward a peer before the proxy stops reading the other side.
    static let highWatermark = 256 * 1024
    /// Bytes libevent may read ahead from a socket before pausing it.
    static let readAhead = 256 * 1024

    let loop: EventLoop
    let router: Router
    let pool: UpstreamPool
    let timeouts: Timeouts
    let maxConnectionsPerUpstream: Int
    /// Staging area for the first bytes of a request body, validated before anything is sent upstream.
    let scratch = OwnedEventBuffer()
    let logger: Logger
    private var sessions: [ObjectIdentifier: ClientSession] = [:]
    private var tunnels: [ObjectIdentifier: Tunnel] = [:]

    init(loop: EventLoop, router: Router, config: SidecarConfig, logger: Logger) {
        self.loop = loop
        self.router = router
        self.timeouts = config.timeouts
        self.maxConnectionsPerUpstream = config.maxConnectionsPerUpstream
        self.pool = UpstreamPool(loop: loop, limit: config.maxConnectionsPerUpstream,
                                 connectTimeout: config.timeouts.connect, idleTimeout: config.timeouts.upstreamIdle)
        self.logger = logger
    }

    /// Takes a freshly accepted client connection.
    func adopt(_ connection: Connection) {
        let session = ClientSession(client: connection, context: self)
        sessions[ObjectIdentifier(session)] = session
        session.start()
    }

    /// Forgets a session that has closed (or became a tunnel).
    func remove(_ session: ClientSession) {
        sessions.removeValue(forKey: ObjectIdentifier(session))
    }

    /// Keeps a CONNECT tunnel alive until it ends.
    func adoptTunnel(_ tunnel: Tunnel) {
        tunnels[ObjectIdentifier(tunnel)] = tunnel
    }

    /// Forgets a tunnel that has ended.
    func removeTunnel(_ tunnel: Tunnel) {
        tunnels.removeValue(forKey: ObjectIdentifier(tunnel))
    }

    /// Number of open client sessions.
    var sessionCount: Int { sessions.count }

    /// Closes every client session, tunnel and pooled connection (loop shutdown).
    func closeAll() {
        for session in Array(sessions.values) { session.abort() }
        sessions.removeAll()
        for tunnel in Array(tunnels.values) { tunnel.abort() }
        tunnels.removeAll()
        pool.closeAll()
    }
}
