import Tracing
import Config
import EventLoop
import HTTP1
import HTTP2
import Logging

/// What every client session on one worker loop shares: the loop, routing, the upstream pool,
/// a staging buffer, settings, and the set of live sessions. Confined to the loop's thread.
final class WorkerContext {
    /// Output bytes queued toward a peer before the proxy stops reading the other side.
    static let highWatermark = 256 * 1024
    /// Bytes libevent may read ahead from a socket before pausing it.
    static let readAhead = 256 * 1024

    let loop: EventLoop
    /// nghttp2's allocator for this worker's HTTP/2 sessions, app and upstream sides (nil under
    /// AddressSanitizer).
    let http2Blocks = HTTP2BlockCache.forSessions()
    /// Routing; replaced on reload (requests in flight keep the decision they started with).
    var router: Router {
        didSet { routerReference = UnretainedReference(router) }
    }
    /// ``router``, kept alive by it, for ``withRouter(_:)``.
    private var routerReference: UnretainedReference<Router>

    /// Calls `body` with the router without retaining it around the call (a look through
    /// ``router``, a stored `var`, retains and releases it: two atomic operations per request).
    /// Only for calls that decide and return: nothing a router does replaces it (a reload does,
    /// between events).
    @inline(__always)
    func withRouter<Result>(_ body: (Router) -> Result) -> Result {
        routerReference.with(body)
    }
    let pool: UpstreamPool
    var timeouts: Timeouts
    var maxConnectionsPerUpstream: Int
    /// Staging area for the first bytes of a request body, validated before anything is sent upstream.
    let scratch = OwnedEventBuffer()
    /// The body kept by every request queued for a connection with none staged: always empty
    /// (only ever moved from), so such a request allocates no buffer of its own.
    let noQueuedBody = OwnedEventBuffer()
    /// The field lines array response heads are parsed into, given back after each head so the
    /// next one reuses its storage (``takeFieldLines()``).
    var fieldLines: [FieldLine] = []
    /// The bytes of the last client-facing response head, emptied and given back once they
    /// were staged so the next head is built in the same storage (``takeHeadBytes()``).
    var headBytes: [UInt8] = []
    let logger: Logger
    /// Whether a line is logged per request.
    let accessLog: Bool
    /// ``fieldLines``, moved out (the context keeps no reference, so it is filled in place).
    func takeFieldLines() -> [FieldLine] {
        var lines: [FieldLine] = []
        swap(&lines, &fieldLines)
        return lines
    }

    /// Storage of request heads whose exchanges ended, for the next heads to be parsed into
    /// (``takeHeadStorage()``, ``recycle(_:)``): a few, each small (see ``recycle(_:)``).
    private var headStorages = SpareList<RequestHeadStorage>(limit: 512)

    /// Storage for the next request head: a recycled one if there is one.
    func takeHeadStorage() -> RequestHeadStorage {
        headStorages.take() ?? RequestHeadStorage()
    }

    /// Keeps `storage` for a later head, unless enough are kept already or it grew large (an
    /// unusually large head's memory goes back rather than staying with the worker). 512: HTTP/2
    /// apps keep hundreds of streams in flight (50 connections × 10), each holding one; with
    /// 64 kept, two in three streams made theirs anew. A usual head's storage is about half a
    /// KiB (2 MiB kept at most; a reclaimed head holds no target, ``RequestHead/reclaimStorage(_:)``).
    @inline(__always)  // (every HTTP/1.1 exchange's end: out of line it cost 10 instructions more)
    func recycle(_ storage: consuming RequestHeadStorage) {
        guard storage.capacity <= 4096 else { return }
        headStorages.keep(storage)
    }

    /// ``headBytes``, moved out (the context keeps no reference, so it is filled in place).
    func takeHeadBytes() -> [UInt8] {
        var bytes: [UInt8] = []
        swap(&bytes, &headBytes)
        return bytes
    }

    /// Storage of HTTP/2 streams' response heads that went to their codecs, for the next heads
    /// (``takeStreamHeadBytes()``): many streams' heads are read in one poll before any goes
    /// out, so many are kept, each small. 512, as for request heads: at 50 connections × 10
    /// streams, one in three streams made its head's bytes and lines anew with 128 kept.
    private var streamHeadStorages = SpareList<[UInt8]>(limit: 512)

    /// Storage for an HTTP/2 stream's response head: a kept one, or an empty array.
    func takeStreamHeadBytes() -> [UInt8] {
        streamHeadStorages.take() ?? []
    }

    /// The lines of HTTP/2 streams' response heads (``UpstreamResponse/keptLines``) that went
    /// to their codecs, as ``streamHeadStorages`` keeps their bytes.
    private var streamHeadLines = SpareList<[FieldLine]>(limit: 512)

    /// Storage for where an HTTP/2 stream's response head lines are: a kept one, or an empty
    /// array.
    func takeStreamHeadLines() -> [FieldLine] {
        streamHeadLines.take() ?? []
    }

    /// An HTTP/2 stream's response head went to its codec: its storage serves a next head
    /// (unless enough are kept, or it grew large: its memory goes back to the allocator).
    func giveBack(streamHead bytes: consuming [UInt8], lines: consuming [FieldLine]) {
        // (At most 512 × (2 KiB + 64 lines of 32 bytes), 2 MiB, kept; a usual head's are about
        // 700 bytes together. A poll reads up to one head per upstream connection, and a
        // worker's apps hold up to 1,024 streams, each with one.)
        if bytes.capacity <= 2048 {
            bytes.removeAll(keepingCapacity: true)
            streamHeadStorages.keep(bytes)
        }
        if lines.capacity <= 64 {
            lines.removeAll(keepingCapacity: true)
            streamHeadLines.keep(lines)
        }
    }

    /// Timers of sessions that ended, for the next sessions (``takeTimer()``): an HTTP/2 app's
    /// every stream has a session of its own, and a timer made and freed per stream was an
    /// allocation and a free. Renewed when kept (``LoopTimer/renew()``), so a kept timer holds
    /// its libevent event and maybe a pending expiry, which finds nothing due (its next owner's
    /// deadline, when later, needs no `event_add`): its action never runs. 512, as for head storages: an app's 50 connections ×
    /// 10 streams end and begin hundreds of sessions at a time (with 64 kept, three in five
    /// streams made theirs anew). About 250 bytes each.
    private var spareTimers = SpareList<LoopTimer>(limit: 512)

    /// A timer on this worker's loop, not armed, with no owner and no action: a kept one, or new.
    func takeTimer() -> LoopTimer {
        spareTimers.take() ?? LoopTimer(on: loop) {}
    }

    /// A session's timer it is done with (no one else holds it): kept for a next session.
    func giveBack(timer: LoopTimer) {
        guard !spareTimers.isFull else { return }
        timer.renew()
        spareTimers.keep(timer)
    }

    /// This worker's counters (only touched on this loop).
    var metrics = ProxyMetrics()
    private var sessions: [ObjectIdentifier: ClientSession] = [:]
    private(set) var tunnels: [ObjectIdentifier: Tunnel] = [:]
    /// Apps' HTTP/2 connections (each serves its streams with sessions of its own).
    private var http2Sessions: [ObjectIdentifier: HTTP2ServerSession] = [:]
    /// Streams those connections serve now (``HTTP2ServerSession/workerStreamLimit``).
    var http2Streams = 0
    /// How many of their new streams start per loop iteration.
    private(set) lazy var http2Starts = HTTP2StreamStarts(loop: loop)
    /// This worker's listener, paused while the worker holds ``clientShare`` connections. Weak:
    /// the listener's accept closure holds this context.
    weak var listener: Listener?
    /// Most client connections (sessions + tunnels) this worker holds at once: its share of
    /// `maxClientConnections`. Each worker counts only its own, so no lock is shared.
    private(set) var clientShare: Int
    private var acceptErrorLog = AcceptErrorLog()

    /// This worker's index (for access records).
    let worker: Int
    /// Where access records go; `nil`: through ``logger``.
    let accessLogWriter: (any AccessLogWriter)?

    /// The disk space response spools may use (shared by every worker).
    let spoolBudget: SpoolBudget
    /// The memory sessions may hold in output beyond a small share each (shared by every worker).
    let bufferBudget: BufferBudget

    /// HTTPS interception (the CA and its leaves), when the configuration has `intercept`.
    var interception: Interception?
    /// Records request spans, when tracing is on (nil: off, and `traceparent` passes untouched).
    var tracer: Tracer?
    /// Where audit records go (`audit:`), nil when none are written.
    var auditLog: AuditLog?
    /// Span ids of this worker's requests.
    var traceIDs = IDGenerator()

    /// Set for a ``LocalServer``'s context: every request is answered by its responder, none
    /// is routed upstream.
    let local: LocalService?
    /// Largest request head accepted (bigger gets 431).
    let requestHeadLimit: Int
    /// Most field lines in a request head (more gets 431).
    let requestFieldLimit: Int

    /// A proxy worker's context; with `local`, a ``LocalServer``'s (every request answered by
    /// its responder, heads bounded by its limits).
    init(loop: EventLoop, router: Router, config: SidecarConfig, clientShare: Int, logger: Logger,
         worker: Int = 0, accessLogWriter: (any AccessLogWriter)? = nil, spoolBudget: SpoolBudget,
         bufferBudget: BufferBudget = BufferBudget(), local: LocalService? = nil) {
        self.spoolBudget = spoolBudget
        self.bufferBudget = bufferBudget
        self.worker = worker
        self.accessLogWriter = accessLogWriter
        self.loop = loop
        self.clientShare = clientShare
        self.router = router
        self.routerReference = UnretainedReference(router)
        self.timeouts = config.timeouts
        self.maxConnectionsPerUpstream = config.maxConnectionsPerUpstream
        // Every connection a key may open may also wait idle (until upstreamIdle): with fewer,
        // a burst above the idle bound (HTTP/2 apps: 50 connections × 10 streams) closes
        // connections at each lull and dials them again at the next burst (measured: one new
        // backend connection per 14 requests at 128).
        self.pool = UpstreamPool(loop: loop, limit: config.maxConnectionsPerUpstream,
                                 connectTimeout: config.timeouts.connect, idleTimeout: config.timeouts.upstreamIdle,
                                 maxIdlePerKey: max(128, config.maxConnectionsPerUpstream), http2Blocks: http2Blocks)
        self.logger = logger
        self.accessLog = config.accessLog
        self.local = local
        self.requestHeadLimit = local?.limits.maxHeadBytes ?? HeadLimits.requestHead
        self.requestFieldLimit = local?.limits.maxFields ?? HeadLimits.requestFields
    }

    /// The context of a ``LocalServer``'s loop: no routes, no upstreams, no access log; its
    /// limits bound heads and bodies, and its idle timeout every wait on the client.
    convenience init(loop: EventLoop, local: LocalService) {
        let idle = local.limits.idleTimeout
        var timeouts = Timeouts.default
        timeouts.idle = idle
        timeouts.clientHeader = idle
        timeouts.bodyIdle = idle
        let config = SidecarConfig(timeouts: timeouts, accessLog: false, spool: SpoolConfig(maxBytes: 0))
        self.init(loop: loop, router: Router(), config: config, clientShare: local.limits.maxConnections,
                  logger: Logger(label: "token-sidecar.local"), spoolBudget: SpoolBudget(directory: "", limit: 0),
                  local: local)
    }

    /// Client connections held now (sessions and tunnels).
    var clientConnections: Int { sessions.count + tunnels.count + http2Sessions.count }

    /// A copy of this worker's counters with the gauges filled in (call on this loop).
    func metricsSnapshot() -> ProxyMetrics {
        var snapshot = metrics
        snapshot.clientConnections = sessions.count + tunnels.count + http2Sessions.count
        snapshot.upstreamConnections = pool.gauges()
        snapshot.upstreamTLSHandshakes = pool.tlsHandshakes
        snapshot.upstreamTLSResumed = pool.tlsResumed
        return snapshot
    }

    /// Takes a freshly accepted client connection.
    func adopt(_ connection: any ByteStream, intercepted: InterceptedOrigin? = nil, pendingInput: Bool = false) {
        let session = ClientSession(client: connection, context: self, intercepted: intercepted)
        sessions[ObjectIdentifier(session)] = session
        updateAdmission()
        session.start(pendingInput: pendingInput)
    }

    /// Forgets a session that has closed (or became a tunnel).
    func remove(_ session: ClientSession) {
        sessions.removeValue(forKey: ObjectIdentifier(session))
        updateAdmission()
        checkDrained()
    }

    /// Counts and (rate-limited) logs a failed accept; the listener has already paused.
    func acceptFailed(_ failure: AcceptFailure) {
        metrics.acceptErrors += 1
        acceptErrorLog.report(failure, to: logger)
    }

    /// Pauses the listener while this worker holds its share of client connections and resumes
    /// it when one closes. Connections beyond the share wait in the kernel's backlog (or go to
    /// another worker's listener) rather than being accepted and starved of descriptors.
    private func updateAdmission() {
        guard let listener else { return }
        if sessions.count + tunnels.count + http2Sessions.count >= clientShare {
            listener.pauseAccepting()
        } else {
            listener.resumeAccepting()
        }
    }

    /// Set while the process drains: no new requests on kept-alive connections.
    private(set) var draining = false
    private var onDrained: (() -> Void)?

    /// Stops keep-alive: idle connections close now, busy ones after their current response;
    /// `onDrained` runs once no connection is left.
    func beginDrain(_ onDrained: @escaping () -> Void) {
        draining = true
        self.onDrained = onDrained
        for session in Array(sessions.values) { session.drainIfIdle() }
        for tunnel in Array(tunnels.values) { tunnel.drain() }
        for session in Array(http2Sessions.values) { session.drain() }
        checkDrained()
    }

    private func checkDrained() {
        guard draining, sessions.isEmpty, tunnels.isEmpty, http2Sessions.isEmpty, let done = onDrained else { return }
        onDrained = nil
        done()
    }

    /// Applies a reloaded configuration's routing, timeouts and connection limit.
    func apply(router: Router, config: SidecarConfig, clientShare: Int) {
        self.router = router
        self.clientShare = clientShare
        updateAdmission()
        self.timeouts = config.timeouts
        self.maxConnectionsPerUpstream = config.maxConnectionsPerUpstream
        pool.update(limit: config.maxConnectionsPerUpstream, connectTimeout: config.timeouts.connect,
                    idleTimeout: config.timeouts.upstreamIdle)
    }

    /// Keeps an app's HTTP/2 connection until it closes.
    func adoptHTTP2(_ session: HTTP2ServerSession) {
        http2Sessions[ObjectIdentifier(session)] = session
        updateAdmission()
    }

    /// Forgets an HTTP/2 connection that has closed.
    func removeHTTP2(_ session: HTTP2ServerSession) {
        http2Sessions.removeValue(forKey: ObjectIdentifier(session))
        updateAdmission()
        checkDrained()
    }

    /// Keeps a CONNECT tunnel alive until it ends.
    func adoptTunnel(_ tunnel: Tunnel) {
        tunnels[ObjectIdentifier(tunnel)] = tunnel
        updateAdmission()
    }

    /// A connection upgraded while the process drains ends as the others did.
    func drainIfDraining(_ tunnel: Tunnel) {
        if draining { tunnel.drain() }
    }

    /// Forgets a tunnel that has ended.
    func removeTunnel(_ tunnel: Tunnel) {
        tunnels.removeValue(forKey: ObjectIdentifier(tunnel))
        updateAdmission()
        checkDrained()
    }

    /// Closes every client session, tunnel and pooled connection (loop shutdown).
    func closeAll() {
        for session in Array(sessions.values) { session.abort() }
        sessions.removeAll()
        for tunnel in Array(tunnels.values) { tunnel.abort() }
        tunnels.removeAll()
        for session in Array(http2Sessions.values) { session.abort() }
        http2Sessions.removeAll()
        http2Starts.forgetWaiting()
        pool.closeAll()
    }
}
