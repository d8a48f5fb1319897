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
    /// An HTTP/2 upstream refused the request's stream without processing it
    /// (`REFUSED_STREAM`, or above the last stream of its `GOAWAY`): safe to send again.
    case streamRefused
}

/// Receives the events of the upstream connection a session is using.
protocol UpstreamConnectionOwner: AnyObject {
    func upstreamDidConnect(_ upstream: UpstreamConnection)
    func upstreamDidRead(_ upstream: UpstreamConnection)
    func upstreamDidDrain(_ upstream: UpstreamConnection)
    func upstream(_ upstream: UpstreamConnection, didEnd reason: UpstreamEnd)
    /// A queued request needs the connection this owner holds while its client does not read:
    /// the owner's exchange should give it up.
    func upstreamWanted(_ upstream: UpstreamConnection)
}

/// One connection to a backend: resolved, connected (racing the addresses, see
/// ``AddressRacer``) and, for https, handshaken and verified; then lent to a client session per
/// exchange and otherwise idle in the worker's ``UpstreamPool``. While idle, any byte or close
/// from the backend retires it.
final class UpstreamConnection: ConnectionDelegate {
    /// The pool's ID for it (``UpstreamPoolState/ConnectionID``).
    let id: UpstreamPoolState.ConnectionID
    let target: UpstreamTarget
    private let pool: UpstreamPool
    private let loop: EventLoop
    /// The socket, once an attempt has won the race (nil for an HTTP/2 upstream: its requests go
    /// through ``http2Stream``).
    private(set) var connection: (any ByteStream)? {
        didSet { socket = (connection as? SocketConnection).map(UnretainedReference.init) }
    }
    /// ``connection`` when it is a socket (not a stream of an HTTP/2 upstream, nor a test's),
    /// which it keeps alive: the exchange's calls to move bytes and set timeouts, a dozen per
    /// request, go through this without a retain and a release each (a call through the
    /// protocol cannot be seen into, so each retained the socket around it). Only for calls
    /// that reach none of the socket's delegates: they cannot end or replace it in place.
    private var socket: UnretainedReference<SocketConnection>?
    /// Bytes written before the connection exists (resolution and connect are in progress);
    /// they go to the winning attempt only.
    private var pending: OwnedEventBuffer? = OwnedEventBuffer()
    /// The HTTP/2 stream it goes through, once it takes one (an `h2` upstream, or one that
    /// agreed on HTTP/2): the request's head goes to it typed (``sendHead(_:)``), its events
    /// come here directly (``streamDidConnect()``, ``streamDidRead()``, ``streamDidDrain()``,
    /// ``stream(didEnd:)``).
    private(set) var http2Stream: HTTP2UpstreamLease?
    /// A request head sent while the upstream's protocol is not known yet (a negotiated one
    /// still connecting): written once it is, as text or typed.
    private var deferredHead: UpstreamRequestPlan?
    /// The request's unframed body ended while its head was deferred: told with the head.
    private var deferredBodyEnd = false
    private var racer: AddressRacer?
    /// A client fell behind since the last response started (``clientFellBehind()``).
    private var narrowAtNextResponse = false
    /// A stream from the pool's ``UpstreamPool/connector`` that has not connected yet.
    private var connecting: (any ByteStream)?
    /// Bounds resolution and racing together (`timeouts.connect`).
    private var connectTimer: Timer?
    private(set) var isClosed = false

    /// The session using it; `nil` while idle in the pool. Strong: the session drops it when its
    /// exchange ends, which breaks the cycle.
    var owner: (any UpstreamConnectionOwner)?
    /// Whether it sits idle in the pool.
    var isIdle = false
    /// How many requests this connection has carried.
    var requestsServed = 0

    init(id: UpstreamPoolState.ConnectionID, target: UpstreamTarget, pool: UpstreamPool, loop: EventLoop) {
        self.id = id
        self.target = target
        self.pool = pool
        self.loop = loop
    }

    /// Resolves and connects, giving up after `timeout`. With a pool ``UpstreamPool/connector``
    /// (tests), the stream it returns is used instead, and connects when it says so.
    func open(timeout: Duration) {
        armConnectTimer(timeout)
        if let connector = pool.connector {
            let stream = connector(target)
            stream.delegate = self
            connecting = stream
            return
        }
        if pool.carriesHTTP2Streams(target) {
            openStream()
            return
        }
        loop.resolve(host: target.host, port: target.port) { [self] result in
            guard !isClosed else { return }
            switch result {
            case .failure(let error):
                fail(.connection(error.timedOut ? .dnsTimeout : .dnsFailure(message: error.message)))
            case .success(let resolved):
                let allowed = target.allowsLinkLocal ? resolved : resolved.filter { !$0.isLinkLocalOrUnspecifiedNetwork }
                if allowed.isEmpty {
                    fail(.prohibitedDestination)
                } else {
                    race(allowed)
                }
            }
        }
    }

    /// Goes through a stream on a shared HTTP/2 connection (``streamDidConnect()`` follows).
    private func openStream() {
        let stream = HTTP2UpstreamLease(target: target.http == .h2 ? target : target.asHTTP2, upstreams: pool.http2)
        stream.user = self
        http2Stream = stream
        stream.connect()
    }

    /// Whether a request head goes as HTTP/1.1 text into ``output`` now: this is (or will be)
    /// a socket to an HTTP/1.1 upstream. Otherwise it goes through ``sendHead(_:)``.
    var takesTextHead: Bool { http2Stream == nil && (isConnected || target.http == .http1) }

    /// Sends the request head `plan` makes: typed to a connected HTTP/2 stream, as text to a
    /// socket, or, before the connection is there, once it is (typed or as text, as it turns
    /// out: a response then never comes before the connect). Returns what it queued for
    /// ``unsentCount``: the text's size, or 1 for a head not (yet) written as bytes — so
    /// "nothing sent" keeps meaning that no whole head left.
    func sendHead(_ plan: consuming UpstreamRequestPlan) -> Int {
        if takesTextHead { return plan.writeText(to: output) }
        if isConnected, let stream = http2Stream {
            sendHead(plan, to: stream)
            return 1
        }
        deferredHead = consume plan
        return 1
    }

    // (Consumed along the way: the plan moves into the lease, not copied — four reference
    // counts each way — and destroyed twice.)
    private func sendHead(_ plan: consuming UpstreamRequestPlan, to stream: HTTP2UpstreamLease) {
        stream.sendHead(plan)
        if deferredBodyEnd {
            deferredBodyEnd = false
            stream.endRequestBody()
        }
    }

    /// The request's body, written unframed to an HTTP/2 stream, ended: its stream ends once
    /// the bytes before the end are sent (with the head, when that waits for the connect).
    func endRequestBody() {
        if isConnected, let http2Stream {
            http2Stream.endRequestBody()
        } else {
            deferredBodyEnd = true
        }
    }

    /// Connects to exactly `addresses`, in this order (no resolution, no filtering), giving up
    /// after `timeout`; `attemptDelay` is how long an attempt runs before the next one starts.
    func open(addresses: [SocketAddress], timeout: Duration,
              attemptDelay: Duration = AddressRacer.defaultAttemptDelay) {
        armConnectTimer(timeout)
        race(addresses, attemptDelay: attemptDelay)
    }

    private func armConnectTimer(_ timeout: Duration) {
        connectTimer = Timer(on: loop, after: timeout) { [unowned self] in fail(.connectTimeout) }
    }

    /// Races the addresses, address families interleaved (RFC 8305 §4 and §5).
    private func race(_ addresses: [SocketAddress], attemptDelay: Duration = AddressRacer.defaultAttemptDelay) {
        let tls = target.tls.map { (context: $0, serverName: target.host) }
        let racer = AddressRacer(addresses: AddressRaceState.interleaved(addresses), tls: tls, loop: loop,
                                 attemptDelay: attemptDelay) { [self] result in
            // Strong on purpose (the cycle ends when the race ends or close() cancels it): a weak
            // reference would give every connection a side table and make each of its many
            // retains and releases per request take the runtime's slow path.
            raceEnded(result)
        }
        self.racer = racer
        racer.start()
    }

    private func raceEnded(_ result: AddressRacer.Outcome) {
        racer = nil
        switch result {
        case .failed(let reason):
            fail(.connection(reason))
        case .connected(let winner) where target.http == .negotiated && winner.tlsApplicationProtocol == "h2":
            // The upstream agreed on HTTP/2: the socket joins the shared connections, and this
            // exchange takes a stream on it (counted as connected when the stream says so).
            pool.countTLSHandshake(winner, key: target.poolKey)
            pool.http2.adopt(winner, negotiatedFor: target)
            openStream()
        case .connected(let winner):
            connectTimer = nil
            connection = winner
            winner.delegate = self
            if let plan = deferredHead {
                // The head sent while connecting goes first, as text (a negotiated upstream
                // that chose HTTP/1.1).
                deferredHead = nil
                _ = plan.writeText(to: winner.output)
            }
            if let pending {
                pending.buffer.moveAll(to: winner.output)
                self.pending = nil
            }
            winner.setReadHighWatermark(readAheadOnConnect)
            winner.startReading()
            pool.connectionEstablished(self)
            owner?.upstreamDidConnect(self)
        }
    }

    private func fail(_ reason: UpstreamEnd) {
        connectTimer = nil
        let owner = self.owner
        close()
        owner?.upstream(self, didEnd: reason)
    }

    /// Where request bytes go: the socket's output once connected, a staging buffer before.
    /// (Inlined, as it was before a stream had a branch here: several calls per request.)
    @inline(__always)
    var output: EventBuffer {
        if let pending { return pending.buffer }
        if let socket { return socket.with { $0.output } }
        if let http2Stream { return http2Stream.output }
        return connection!.output
    }

    /// Request bytes queued and not yet handed to the socket.
    var unsentCount: Int {
        if let pending { return (deferredHead != nil ? 1 : 0) + pending.buffer.count }
        if let http2Stream { return http2Stream.unsentCount }
        return connection?.output.count ?? 0
    }

    /// Response bytes received (empty before the connection exists).
    var input: EventBuffer? {
        guard pending == nil else { return nil }
        if let socket { return socket.with { $0.input } }
        if let http2Stream { return http2Stream.input }
        return connection?.input
    }

    /// The read-ahead the socket starts with once connected (the request's, asked for while it
    /// was still connecting: see ``startReading(readAhead:)``).
    private var readAheadOnConnect = WorkerContext.readAhead

    /// Whether TCP (and TLS) setup completed.
    var isConnected: Bool { pending == nil && (connection != nil || http2Stream != nil) }

    /// Starts reading the socket (after backpressure paused it), at most `readAhead` bytes ahead
    /// of the client (TLS too: what OpenSSL holds beyond it is read once the input drains,
    /// without the socket signalling again). Before the socket exists, the read-ahead is what
    /// it starts with once connected.
    func startReading(readAhead: Int) {
        guard isConnected else {
            // (Asked before the socket exists: it reads this far once it connects.)
            readAheadOnConnect = readAhead
            return
        }
        if let socket {
            socket.with { socket in
                socket.setReadHighWatermark(readAhead)
                socket.startReading()
            }
        } else if let http2Stream {
            // (A stream's reads are bounded by its window, not by a read-ahead.)
            http2Stream.startReading()
        } else if let connection {
            connection.setReadHighWatermark(readAhead)
            connection.startReading()
        }
    }

    /// The client has taken `bytes` of this response: a loopback backend may send more at once
    /// (``ReceiveWindow``).
    func clientTook(_ bytes: Int) {
        guard isConnected else { return }
        if let http2Stream { http2Stream.widenReceiveWindow(taken: bytes) } else { connection?.widenReceiveWindow(taken: bytes) }
    }

    /// The client stopped keeping up: the next response on this connection starts with a small
    /// window again. (Not now: a receive buffer shrunk below the window already offered makes
    /// the kernel drop what the backend has in flight, and the backend waits for a
    /// retransmission timeout.)
    func clientFellBehind() { narrowAtNextResponse = true }

    /// A new response starts: after a client that fell behind, a loopback backend's window
    /// starts small again. After clients that kept up it stays as they grew it: each 1 MiB
    /// response of a keep-alive connection starting at 16 KiB cost 60% more CPU per response.
    func responseStarts() {
        guard narrowAtNextResponse else { return }
        narrowAtNextResponse = false
        if isConnected { connection?.narrowReceiveWindow() }
    }

    /// Pauses reading the socket (the client is not keeping up).
    func stopReading() {
        guard isConnected else { return }
        if let http2Stream { http2Stream.stopReading() } else { connection?.stopReading() }
    }

    /// Sets the socket's inactivity timeouts (applied once connected).
    @inline(__always)
    func setTimeouts(read: Duration?, write: Duration?) {
        guard isConnected else { return }
        if let socket {
            socket.with { $0.setTimeouts(read: read, write: write) }
        } else if let http2Stream {
            http2Stream.setTimeouts(read: read, write: write)
        } else {
            connection?.setTimeouts(read: read, write: write)
        }
    }

    /// Closes the socket (or stops connecting) and tells the pool (which may then serve a
    /// queued request). `reset`: abandon the exchange with a TCP reset, so the backend stops at
    /// once rather than after reading what is still queued toward it (an aborted upload).
    func close(reset: Bool = false) {
        guard !isClosed else { return }
        isClosed = true
        owner = nil
        connectTimer = nil
        racer?.cancel()
        racer = nil
        connecting?.close()
        connecting = nil
        http2Stream?.close()
        if reset { connection?.reset() } else { connection?.close() }
        pending = nil
        deferredHead = nil
        pool.connectionClosed(self)
    }

    /// Leaves the pool for good with its socket, which the caller now owns (an upgraded
    /// connection: no longer HTTP, never reused): the pool counts it as closed, so its slot
    /// serves other requests. Nil (and closed) when it is not connected, or is an HTTP/2 stream
    /// (which no request upgrades).
    func handOver() -> (any ByteStream)? {
        guard !isClosed, isConnected, let stream = connection else {
            close()
            return nil
        }
        isClosed = true
        owner = nil
        connectTimer = nil
        connection = nil
        stream.delegate = nil
        pool.connectionClosed(self)
        return stream
    }

    // MARK: - ConnectionDelegate (only the winning connection reports here)

    func connectionDidConnect(_ connection: any ByteStream) {
        // Only a connector's stream reports its connect here (a race reports to its racer).
        guard let stream = connecting, stream === connection else { return }
        connecting = nil
        raceEnded(.connected(stream))
    }

    func connectionDidRead(_ connection: any ByteStream) {
        if let owner, !isIdle { owner.upstreamDidRead(self); return }
        // A read callback with nothing to read says nothing: a deferred one whose bytes the
        // exchange had already taken (the client's drain pumped them) before it ran, after the
        // connection went back to the pool. Closing there cost a steady 1 MiB run over TLS one
        // new connection and handshake about every 4,000 requests per connection.
        guard !connection.input.isEmpty else { return }
        // An idle connection must not receive anything: the backend is closing it or misbehaving.
        close()
    }

    func connectionDidDrain(_ connection: any ByteStream) {
        if !isIdle { owner?.upstreamDidDrain(self) }
    }

    func connection(_ connection: any ByteStream, didEnd reason: ConnectionEnd) {
        ended(.connection(reason))
    }

    /// The connection or stream ended (`reason`): its exchange hears it; an idle one leaves the
    /// pool.
    private func ended(_ reason: UpstreamEnd) {
        if let owner, !isIdle {
            owner.upstream(self, didEnd: reason)
            return
        }
        // Idle: the read timeout armed by the pool is the idle timeout (our own close); anything
        // else is the backend closing it.
        if isIdle && reason == .connection(.timeout) {
            pool.idleTimedOut(self)
        } else {
            close()
        }
    }

    // MARK: - its HTTP/2 stream's events

    /// The stream is bound to a ready HTTP/2 connection: what was sent while connecting goes
    /// first (the head typed), and the exchange hears the connect as a socket's.
    func streamDidConnect() {
        guard !isClosed, let stream = http2Stream else { return }
        connectTimer = nil
        if let plan = deferredHead.take() {
            sendHead(plan, to: stream)
        }
        if let pending {
            pending.buffer.moveAll(to: stream.output)
            self.pending = nil
        }
        stream.startReading()
        pool.connectionEstablished(self)
        owner?.upstreamDidConnect(self)
    }

    /// Response heads, bytes or the end of its body arrived.
    func streamDidRead() {
        if let owner, !isIdle { owner.upstreamDidRead(self); return }
        // (Between requests it is bound to no HTTP/2 connection, so nothing comes while idle;
        // anything that did would be a response no one asked for.)
        if http2Stream?.seenPeerActivity == .data { close() }
    }

    /// What the exchange sent went to the codec.
    func streamDidDrain() {
        if !isIdle { owner?.upstreamDidDrain(self) }
    }

    /// The stream ended before its response did: refused unprocessed (safe to send again), reset,
    /// timed out, or its connection ended.
    func stream(didEnd reason: ConnectionEnd) {
        ended(reason == .refused && http2Stream?.wasRefused == true ? .streamRefused : .connection(reason))
    }

    /// What the upstream sent that no exchange has taken: `peek` looks into the kernel (a
    /// socket's ``ByteStream/peekPeer()``), otherwise what was seen counts. Nil before it connected.
    @inline(__always)
    func peerActivity(peek: Bool) -> PeerActivity? {
        if let socket { return socket.with { peek ? $0.peekPeer() : $0.seenPeerActivity } }
        if let http2Stream { return http2Stream.seenPeerActivity }
        guard let connection else { return nil }
        return peek ? connection.peekPeer() : connection.seenPeerActivity
    }
}
