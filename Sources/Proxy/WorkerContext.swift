import EventLoop
import Logging

/// What every client session on one worker loop shares: the loop, routing, the upstream pool,
/// a staging buffer, and the set of live sessions. Confined to the loop's thread.
final class WorkerContext {
    /// Output bytes queued toward a peer before the proxy stops reading the other side.
    static let highWatermark = 256 * 1024
    /// Bytes libevent may read ahead from a socket before pausing it.
    static let readAhead = 256 * 1024

    let loop: EventLoop
    let router: Router
    let pool = UpstreamPool()
    /// Staging area for the first bytes of a request body, validated before anything is sent upstream.
    let scratch = OwnedEventBuffer()
    let logger: Logger
    private var sessions: [ObjectIdentifier: ClientSession] = [:]

    init(loop: EventLoop, router: Router, logger: Logger) {
        self.loop = loop
        self.router = router
        self.logger = logger
    }

    /// Takes a freshly accepted client connection.
    func adopt(_ connection: Connection) {
        let session = ClientSession(client: connection, context: self)
        sessions[ObjectIdentifier(session)] = session
        session.start()
    }

    /// Forgets a session that has closed.
    func remove(_ session: ClientSession) {
        sessions.removeValue(forKey: ObjectIdentifier(session))
    }

    /// Number of open client sessions.
    var sessionCount: Int { sessions.count }

    /// Closes every client session and pooled connection (loop shutdown).
    func closeAll() {
        for session in Array(sessions.values) { session.abort() }
        sessions.removeAll()
        pool.closeAll()
    }
}
