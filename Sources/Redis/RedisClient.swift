import EventLoop

/// A small RESP2 client on one event loop: one connection, commands pipelined in order, every
/// command bounded by ``RedisClientSettings/timeout``, `AUTH` and `SELECT` sent first on each
/// new connection, and a reconnect backoff during which commands fail at once (so a caller
/// falls back without waiting when Redis is down).
///
/// Confined to its loop: call every method on the loop's thread; completions run there, never
/// inside the call that issued the command. A timed-out command drops the connection (later
/// replies would be matched to the wrong commands); the next command after the backoff
/// reconnects.
public final class RedisClient: ConnectionDelegate {
    /// The reply to one command: an error reply arrives as ``RedisError/server(_:)``.
    public typealias Completion = (Result<RESPValue, RedisError>) -> Void

    /// The loop everything runs on.
    public let loop: EventLoop
    /// Connection settings.
    public let settings: RedisClientSettings

    private struct Pending {
        let deadline: ContinuousClock.Instant
        let completion: Completion
    }

    private var connection: (any ByteStream)?
    private var parser = RESPParser()
    private var pending: [Pending] = []
    private var pendingHead = 0
    private var deferred: [() -> Void] = []
    private lazy var deferTimer = Timer(on: loop) { [unowned self] in runDeferred() }
    private lazy var timeoutTimer = Timer(on: loop) { [unowned self] in checkTimeouts() }
    private var retryAt: ContinuousClock.Instant?
    private var consecutiveFailures = 0
    private var isClosed = false

    /// Creates a client; nothing connects until the first command.
    public init(settings: RedisClientSettings, loop: EventLoop) {
        self.settings = settings
        self.loop = loop
    }

    /// Whether a connection is open (it may still be connecting).
    public var isConnected: Bool { connection != nil }

    /// Sends a command (name first, binary-safe arguments).
    public func send(_ arguments: [[UInt8]], _ completion: @escaping Completion) {
        if isClosed { return fail(completion, .closed) }
        if connection == nil {
            if let retryAt, ContinuousClock.now < retryAt { return fail(completion, .unavailable("reconnecting")) }
            guard open() else { return fail(completion, .unavailable("cannot connect")) }
        }
        enqueue(RESPCommand.encode(arguments), completion)
    }

    /// ``send(_:_:)`` with text arguments.
    public func send(_ arguments: String..., completion: @escaping Completion) {
        send(arguments.map { Array($0.utf8) }, completion)
    }

    /// Fails every command in flight and closes the connection for good.
    public func close() {
        guard !isClosed else { return }
        isClosed = true
        drop(.closed, backoff: false)
        timeoutTimer.cancel()
        runDeferred()
        deferTimer.cancel()
    }

    // MARK: - Connection

    private func open() -> Bool {
        let made: (any ByteStream)?
        if let tls = settings.tls {
            made = Connection.connectTLS(host: settings.host, port: settings.port, context: tls, on: loop, delegate: self)
        } else {
            made = Connection.connect(host: settings.host, port: settings.port, on: loop, delegate: self)
        }
        guard let made else {
            backOff()
            return false
        }
        connection = made
        parser = RESPParser()
        made.startReading()
        if let password = settings.password {
            var auth = [Array("AUTH".utf8)]
            if let username = settings.username { auth.append(Array(username.utf8)) }
            auth.append(Array(password.utf8))
            enqueue(RESPCommand.encode(auth)) { [unowned self] result in handshakeStep(result, what: "AUTH") }
        }
        if settings.database != 0 {
            enqueue(RESPCommand.encode("SELECT", String(settings.database))) { [unowned self] result in
                handshakeStep(result, what: "SELECT")
            }
        }
        return true
    }

    /// A refused `AUTH` or `SELECT` fails everything queued behind it.
    private func handshakeStep(_ result: Result<RESPValue, RedisError>, what: String) {
        guard case .failure(let error) = result, case .server(let message) = error else { return }
        let code = message.split(separator: " ").first.map(String.init) ?? "ERR"
        drop(.server("\(what) refused (\(code))"), backoff: true)
    }

    private func enqueue(_ bytes: [UInt8], _ completion: @escaping Completion) {
        let deadline = ContinuousClock.now + settings.timeout
        pending.append(Pending(deadline: deadline, completion: completion))
        connection?.write(bytes)
        if pending.count - pendingHead == 1 { timeoutTimer.schedule(after: settings.timeout) }
    }

    private func fail(_ completion: @escaping Completion, _ error: RedisError) {
        deferred.append { completion(.failure(error)) }
        if deferred.count == 1 { deferTimer.schedule(after: .zero) }
    }

    private func runDeferred() {
        let work = deferred
        deferred.removeAll()
        for item in work { item() }
    }

    private func checkTimeouts() {
        guard pendingHead < pending.count else { return }
        let now = ContinuousClock.now
        if pending[pendingHead].deadline <= now {
            drop(.timeout, backoff: true)
        } else {
            timeoutTimer.schedule(after: pending[pendingHead].deadline - now)
        }
    }

    /// Closes the connection and fails every command in flight with `error`.
    private func drop(_ error: RedisError, backoff: Bool) {
        if let connection {
            connection.delegate = nil
            connection.close()
        }
        connection = nil
        let failed = pending[pendingHead...]
        pending.removeAll()
        pendingHead = 0
        if backoff { backOff() }
        for item in failed { item.completion(.failure(error)) }
    }

    private func backOff() {
        consecutiveFailures += 1
        let exponent = min(consecutiveFailures - 1, 10)
        let delay = min(settings.reconnectDelay * (1 << exponent), settings.maxReconnectDelay)
        retryAt = ContinuousClock.now + delay
    }

    // MARK: - ConnectionDelegate

    /// Connected (and TLS verified): the backoff resets once a reply arrives.
    public func connectionDidConnect(_ connection: any ByteStream) {}

    /// Parses replies and completes commands in order.
    public func connectionDidRead(_ connection: any ByteStream) {
        let input = connection.input
        let count = input.count
        guard count > 0 else { return }
        parser.append(input.peekBytes(max: count))
        input.drain(count)
        while self.connection === connection {
            let value: RESPValue?
            do {
                value = try parser.next()
            } catch {
                drop(.protocolViolation(error.description), backoff: true)
                return
            }
            guard let value else { break }
            guard pendingHead < pending.count else {
                drop(.protocolViolation("a reply nobody asked for"), backoff: true)
                return
            }
            let item = pending[pendingHead]
            pendingHead += 1
            if pendingHead == pending.count {
                pending.removeAll(keepingCapacity: true)
                pendingHead = 0
                timeoutTimer.suspend()
            }
            consecutiveFailures = 0
            retryAt = nil
            if case .error(let message) = value {
                item.completion(.failure(.server(message)))
            } else {
                item.completion(.success(value))
            }
        }
    }

    /// The connection ended: fail what is in flight and back off.
    public func connection(_ connection: any ByteStream, didEnd reason: ConnectionEnd) {
        guard self.connection === connection else {
            connection.close()
            return
        }
        drop(.unavailable(reason.description), backoff: true)
    }
}
