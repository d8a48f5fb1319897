import EventLoop
import HTTP1
import HTTPMessage

/// One app connection: reads HTTP/1.1 requests one at a time (pipelined requests wait in the
/// input buffer, so responses go out in order) and serves each as an ``ExchangeSession`` does;
/// between requests it keeps the connection (keep-alive, the head timeouts), and it is where a
/// connection becomes something else: a `CONNECT` tunnel, an intercepted TLS or plaintext
/// tunnel whose requests a new session reads (`ClientSession+Intercept.swift`), an upgraded
/// tunnel (`ClientSession+Upgrade.swift`), an HTTP/2 connection (``continueAsHTTP2()``), or the
/// admin listener's local answers (`ClientSession+Local.swift`).
///
/// Owned by the ``WorkerContext`` until it closes.
final class ClientSession: ExchangeSession, ConnectionDelegate {
    /// The app's connection (a socket in production, an in-memory stream in tests): the same
    /// as ``ExchangeSession/appConnection``, unwrapped.
    let client: any ByteStream
    var requestReader: HeadReader
    /// The request a local responder is answering (a ``LocalServer``'s session); `nil` otherwise.
    var local: LocalCall?
    /// Set while ``readRequests()`` runs: an exchange that finishes inside it (a local answer
    /// given at once) leaves the next pipelined request to that loop instead of recursing.
    var readingRequests = false
    /// A request ended while ``readRequests()`` ran: it reads one more head.
    var readAgain = false

    /// A session for an app's connection (or the TLS server side, or the plaintext rest, of an
    /// intercepted tunnel: `intercepted` names its origin).
    init(client: any ByteStream, context: WorkerContext, intercepted: InterceptedOrigin? = nil) {
        self.client = client
        self.requestReader = HeadReader(limit: context.requestHeadLimit)
        super.init(appConnection: client, context: context, intercepted: intercepted, load: nil, grpc: false)
    }

    /// `pendingInput`: the client has sent bytes this session has not read yet (a tunnel's first
    /// byte, peeked but left in the kernel), so a draining process still reads them.
    func start(pendingInput: Bool = false) {
        client.delegate = self
        client.reportsCloseWhilePaused = true
        client.setReadHighWatermark(WorkerContext.readAhead)
        client.startReading()
        perform(connection.start(draining: context.draining, inputEmpty: client.input.isEmpty && !pendingInput))
    }

    override func abort() {
        local = nil
        super.abort()
    }

    override func leaveContext() {
        context.remove(self)
    }

    /// While draining, a connection between requests is closed (busy ones finish first).
    func drainIfIdle() {
        perform(connection.drainBegan(inputEmpty: client.input.isEmpty))
    }

    /// A request was answered and the connection stays open: the keep-alive idle timeout runs
    /// until the next head starts.
    override func awaitNextRequest() {
        perform(connection.requestEnded(draining: context.draining, inputEmpty: client.input.isEmpty))
    }

    override func beginLocal(_ head: consuming RequestHead, _ service: LocalService) {
        serveLocally(head, service)
    }

    override func switchProtocols(_ io: ExchangeIO) {
        upgrade(io)
    }

    override func connectionOnlyStep(_ action: ClientConnectionStateMachine.Action) -> ClientConnectionStateMachine.Action {
        switch action {
        case .peekFirstByte: awaitFirstByte()
        case .continueAsTLS(let tunnel): continueAsTLS(tunnel)
        case .continueAsPlaintext(let tunnel): continueAsPlaintext(tunnel)
        case .refuseTLS(let tunnel): refuseTLS(tunnel)
        case .collectLocalBody(let sendContinue): if let call = local { return collectBody(call, sendContinue: sendContinue) }
        case .answerLocally: if let call = local { answer(call) }
        case .respondLocally(let keepClient): if let call = local { return respond(call, keepClient: keepClient) }
        case .failLocally(let failure): failLocally(failure)
        default: assertionFailure("\(action) is the session's to perform")
        }
        return .none
    }

    // MARK: - ConnectionDelegate

    func connectionDidRead(_ connection: any ByteStream) { clientDidRead() }

    func connectionDidDrain(_ stream: any ByteStream) { clientDidDrain() }

    func connection(_ stream: any ByteStream, didEnd reason: ConnectionEnd) { clientDidEnd(reason) }

    // MARK: - heads

    /// Reads the next request head, and the next one as long as each request ends at once (an
    /// error answered with keep-alive, a local answer given at once): called whenever a
    /// request ended and the connection stays open, and when bytes arrive between requests.
    ///
    /// A trampoline, not a recursion: a request that ends inside ``begin(_:)`` calls this again,
    /// which only asks the running loop for one more turn (``readAgain``), so thousands of
    /// pipelined requests answered at once take no stack.
    override func readRequests() {
        guard !readingRequests else {
            readAgain = true
            return
        }
        readingRequests = true
        defer { readingRequests = false }
        repeat {
            readAgain = false
            readNextHead()
        } while readAgain
    }

    /// The authority the connection's last head named, parsed (the next head that names it
    /// with the same bytes takes it as it is: about 300 instructions a request).
    private var lastHost: ParsedHost?

    /// Reads one request head, if a whole one is buffered and no request is under way (one
    /// request at a time: pipelined ones wait in the input), and begins its request.
    private func readNextHead() {
        guard current == nil, local == nil, !client.input.isEmpty else { return }
        let head: RequestHead
        do {
            // Bound in the `do` and moved out: an optional bound after it was copied (a
            // retain and release per field array).
            let fieldLimit = context.requestFieldLimit
            // (Through a local: the closure cannot take a stored property inout.)
            var lastHost = self.lastHost
            defer { self.lastHost = lastHost }
            guard let parsed = try requestReader.read(from: client.input, prefix: { bytes throws(HTTPParseError) in
                try RequestHeadParser.parsePrefix(bytes, maxFields: fieldLimit, reusing: context.takeHeadStorage(),
                                                  lastHost: &lastHost)
            }) else {
                // Part of a head is here: from now on the client has clientHeader to finish it.
                perform(connection.headIncomplete())
                return
            }
            head = parsed
        } catch {
            reject(error)
            return
        }
        perform(connection.headComplete())
        begin(head)
    }

    /// An app that speaks HTTP/2 with prior knowledge (its preface, `PRI * HTTP/2.0`, reads as a
    /// malformed HTTP/1.1 head): the connection goes on as HTTP/2, every stream a request of
    /// its own (``HTTP2ServerSession``). Not for a local responder (admin).
    override func continueAsHTTP2IfPreface() -> Bool {
        guard context.local == nil, current == nil else { return false }
        let preface = HTTP2ServerSession.prefaceStart
        let matches = client.input.withContiguousPrefix(preface.count) { $0.elementsEqual(preface) }
        guard matches else { return false }
        continueAsHTTP2()
        return true
    }

    /// Hands the connection to an ``HTTP2ServerSession`` (with what its input holds).
    func continueAsHTTP2() {
        headTimer.stop()
        exchangeTimer.stop()
        let session = HTTP2ServerSession(client: client, context: context, intercepted: intercepted)
        // Adopt first: a drain must never see a moment with neither session.
        context.adoptHTTP2(session)
        releaseOutputCharge()
        context.remove(self)
        client.delegate = nil
        session.start()
        // A connection that turns HTTP/2 while the process drains is drained too (GOAWAY).
        if context.draining { session.drain() }
    }

    // MARK: - CONNECT

    /// A `CONNECT`: a tunnel, an interception, or a refusal, as the router says.
    @inline(never)
    override func startTunnel(_ head: RequestHead) {
        guard case .authority(let authority) = head.target else {
            refuse(.badRequest("CONNECT needs an authority-form target (host:port)"), head: head, connect: true)
            return
        }
        if let origin = intercepted {
            // Inside an intercepted tunnel every request is for its origin: no tunnel within it.
            refuse(.misdirected(origin, "a CONNECT to \(authority.description)"), head: head, connect: true)
            return
        }
        if let interception = context.interception, context.router.intercepts(authority) {
            startInterception(head, authority, interception)
            return
        }
        switch context.router.tunnelDecision(for: authority) {
        case .failure(let error):
            refuse(error, head: head, connect: true)
        case .success(let destination):
            connection.tunnelStarted()
            headTimer.stop()
            let tunnel = Tunnel(client: client, host: destination.host, port: destination.port, context: context)
            // Adopt first: a drain must never see a moment with neither the session nor the tunnel.
            context.adoptTunnel(tunnel)
            // The tunnel takes the client's output over uncounted (see BufferBudget).
            releaseOutputCharge()
            context.remove(self)
            client.delegate = nil
            tunnel.start()
        }
    }
}
