import Config
import EventLoop

/// Why an upstream connection ended, as the session sees it.
enum UpstreamEnd: Equatable {
    /// The socket (or TLS, or DNS) reported an end or a failure.
    case connection(ConnectionEnd)
    /// Every address the name resolved to is a prohibited (link-local / metadata) address.
    case prohibitedDestination
    /// Connecting (TCP + TLS handshake) took longer than `timeouts.connect`.
    case connectTimeout
}

/// Receives the events of the upstream connection a session is using.
protocol UpstreamConnectionOwner: AnyObject {
    func upstreamDidConnect(_ upstream: UpstreamConnection)
    func upstreamDidRead(_ upstream: UpstreamConnection)
    func upstreamDidDrain(_ upstream: UpstreamConnection)
    func upstream(_ upstream: UpstreamConnection, didEnd reason: UpstreamEnd)
}

/// One connection to a backend: resolved, connected (address by address) and, for https,
/// handshaken and verified; then lent to a client session per exchange and otherwise idle in
/// the worker's ``UpstreamPool``. While idle, any byte or close from the backend retires it.
final class UpstreamConnection: ConnectionDelegate {
    let target: UpstreamTarget
    private let pool: UpstreamPool
    private let loop: EventLoop
    private(set) var connection: Connection?
    /// Bytes written before the connection exists (resolution and connect are in progress).
    private var pending: OwnedEventBuffer? = OwnedEventBuffer()
    private var addresses: [SocketAddress] = []
    private var connectTimer: Timer?
    private var lastFailure: ConnectionEnd?
    private(set) var isClosed = false

    /// The session using it; `nil` while idle in the pool. Strong: the session drops it when its
    /// exchange ends, which breaks the cycle.
    var owner: (any UpstreamConnectionOwner)?
    /// Whether it sits idle in the pool.
    var isIdle = false
    /// When it last went idle (for spotting backends that close right after responding).
    var idleSince: ContinuousClock.Instant?
    /// How many requests this connection has carried.
    var requestsServed = 0

    init(target: UpstreamTarget, pool: UpstreamPool, loop: EventLoop) {
        self.target = target
        self.pool = pool
        self.loop = loop
    }

    /// Resolves and connects, giving up after `timeout`.
    func open(timeout: Duration) {
        connectTimer = Timer(on: loop, after: timeout) { [unowned self] in
            connection?.close()
            connection = nil
            fail(.connectTimeout)
        }
        loop.resolve(host: target.host, port: target.port) { [self] result in
            guard !isClosed else { return }
            switch result {
            case .failure(let error):
                fail(.connection(error.timedOut ? .dnsTimeout : .dnsFailure(message: error.message)))
            case .success(let resolved):
                addresses = target.allowsLinkLocal ? resolved : resolved.filter { !$0.isLinkLocalOrUnspecifiedNetwork }
                if addresses.isEmpty {
                    fail(.prohibitedDestination)
                } else {
                    connectNext()
                }
            }
        }
    }

    /// Connects to exactly `addresses` (no resolution), giving up after `timeout`.
    func open(addresses: [SocketAddress], timeout: Duration) {
        connectTimer = Timer(on: loop, after: timeout) { [unowned self] in
            connection?.close()
            connection = nil
            fail(.connectTimeout)
        }
        self.addresses = addresses
        connectNext()
    }

    /// Tries the next resolved address (A and AAAA in resolver order).
    private func connectNext() {
        guard !addresses.isEmpty else {
            fail(.connection(lastFailure ?? .refused))
            return
        }
        let address = addresses.removeFirst()
        let tls = target.tls.map { (context: $0, serverName: target.host) }
        guard let attempt = Connection.connect(to: address, tls: tls, on: loop, delegate: self) else {
            fail(.connection(.socketError(errno: 0)))
            return
        }
        connection = attempt
    }

    private func fail(_ reason: UpstreamEnd) {
        connectTimer = nil
        let owner = self.owner
        close()
        owner?.upstream(self, didEnd: reason)
    }

    /// Where request bytes go: the socket's output once connected, a staging buffer before.
    var output: EventBuffer {
        if let pending { return pending.buffer }
        return connection!.output
    }

    /// Request bytes queued and not yet handed to the socket.
    var unsentCount: Int { pending?.buffer.count ?? connection?.output.count ?? 0 }

    /// Response bytes received (empty before the connection exists).
    var input: EventBuffer? { pending == nil ? connection?.input : nil }

    /// Whether TCP (and TLS) setup completed.
    var isConnected: Bool { pending == nil && connection != nil }

    /// Starts reading the socket (after backpressure paused it).
    func startReading() { if isConnected { connection?.startReading() } }

    /// Pauses reading the socket (the client is not keeping up).
    func stopReading() { if isConnected { connection?.stopReading() } }

    /// Sets the socket's inactivity timeouts (applied once connected).
    func setTimeouts(read: Duration?, write: Duration?) {
        if isConnected { connection?.setTimeouts(read: read, write: write) }
    }

    /// Closes the socket and tells the pool (which may then serve a queued request).
    func close() {
        guard !isClosed else { return }
        isClosed = true
        owner = nil
        connectTimer = nil
        connection?.close()
        pending = nil
        pool.connectionClosed(self)
    }

    // MARK: - ConnectionDelegate

    func connectionDidConnect(_ connection: Connection) {
        connectTimer = nil
        if let pending {
            pending.buffer.moveAll(to: connection.output)
            self.pending = nil
        }
        connection.setReadHighWatermark(WorkerContext.readAhead)
        connection.startReading()
        owner?.upstreamDidConnect(self)
    }

    func connectionDidRead(_ connection: Connection) {
        if let owner, !isIdle { owner.upstreamDidRead(self); return }
        // An idle connection must not receive anything: the backend is closing it or misbehaving.
        close()
    }

    func connectionDidDrain(_ connection: Connection) {
        if !isIdle { owner?.upstreamDidDrain(self) }
    }

    func connection(_ connection: Connection, didEnd reason: ConnectionEnd) {
        if !isConnected {
            // This address failed before the connection was usable: try the next one, unless
            // verification failed (another address of the same name will not fix a certificate).
            connection.close()
            self.connection = nil
            lastFailure = reason
            switch reason {
            case .tlsCertificate, .tlsProtocol, .timeout: fail(.connection(reason))
            default: connectNext()
            }
            return
        }
        if let owner, !isIdle { owner.upstream(self, didEnd: .connection(reason)); return }
        close()
    }
}
