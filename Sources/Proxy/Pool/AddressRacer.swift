import EventLoop

/// Connects to the first of a name's addresses that answers, racing attempts as RFC 8305 §5
/// ("Happy Eyeballs") describes: each address gets its own attempt; the next attempt starts
/// ``attemptDelay`` after the previous one started, or at once when it fails; the first attempt
/// to complete (TCP connected and, for TLS, handshaken and verified) wins and every other one is
/// closed. A blackholed address (often IPv6) then costs 250 ms instead of the whole connect
/// timeout.
///
/// The decisions are ``AddressRaceState``'s; this class performs them over sockets and a timer
/// and reports what the sockets and the timer did.
///
/// It has no overall deadline: its owner (``UpstreamConnection``) bounds resolution and racing
/// together with `timeouts.connect` and calls ``cancel()``.
final class AddressRacer: ConnectionDelegate {
    /// How a race ended.
    enum Outcome {
        /// This attempt completed first (its delegate cleared, reading not started).
        case connected(any ByteStream)
        /// Every attempt failed (the last failure), or one failed in a way another address
        /// cannot fix (TLS verification or protocol).
        case failed(ConnectionEnd)
    }

    /// RFC 8305 §5's recommended "Connection Attempt Delay".
    static let defaultAttemptDelay: Duration = .milliseconds(250)

    private let loop: EventLoop
    private let addresses: [SocketAddress]
    private let tls: (context: TLSClientContext, serverName: String)?
    private let attemptDelay: Duration
    private var state: AddressRaceState
    /// Attempts started and not yet failed or closed, with their address's index.
    private var attempts: [(index: Int, stream: any ByteStream)] = []
    private var delayTimer: Timer?
    private var completion: ((Outcome) -> Void)?

    /// Prepares a race over `addresses` (tried in this order; see
    /// ``AddressRaceState/interleaved(_:)``). `completion` runs once, on the loop, with the
    /// outcome; never after ``cancel()``.
    init(addresses: [SocketAddress], tls: (context: TLSClientContext, serverName: String)?, loop: EventLoop,
         attemptDelay: Duration = AddressRacer.defaultAttemptDelay,
         completion: @escaping (Outcome) -> Void) {
        self.addresses = addresses
        self.tls = tls
        self.loop = loop
        self.attemptDelay = attemptDelay
        self.completion = completion
        state = AddressRaceState(addressCount: addresses.count)
    }

    /// Starts the first attempt.
    func start() {
        handle(.start)
    }

    /// Closes every attempt; the completion will not run.
    func cancel() {
        completion = nil
        handle(.cancel)
    }

    private func handle(_ event: AddressRaceState.Event) {
        for action in state.handle(event) { perform(action) }
    }

    private func perform(_ action: AddressRaceState.Action) {
        switch action {
        case .armDelay:
            if delayTimer == nil {
                delayTimer = Timer(on: loop) { [unowned self] in handle(.delayElapsed) }
            }
            delayTimer?.schedule(after: attemptDelay)
        case .startAttempt(let index):
            guard let attempt = Connection.connect(to: addresses[index], tls: tls, on: loop, delegate: self) else {
                // No socket or TLS object for this one (resources): go on with the next. (The
                // state's last action, so reporting from here is in order.)
                handle(.attemptFailed(index: index, end: .socketError(errno: 0)))
                return
            }
            attempts.append((index, attempt))
        case .closeAttempts(let kept):
            delayTimer?.cancel()
            delayTimer = nil
            let losers = attempts.filter { $0.index != kept }
            attempts.removeAll { $0.index != kept }
            for loser in losers { loser.stream.close() }
        case .complete(let outcome):
            let completion = self.completion
            self.completion = nil
            switch outcome {
            case .failed(let end):
                completion?(.failed(end))
            case .connected(let index):
                guard let position = attempts.firstIndex(where: { $0.index == index }) else {
                    return assertionFailure("the winning attempt \(index) is not in flight")
                }
                let winner = attempts.remove(at: position).stream
                winner.delegate = nil
                completion?(.connected(winner))
            }
        }
    }

    /// The index of `connection`'s address, while it is an attempt in flight.
    private func index(of connection: any ByteStream) -> Int? {
        attempts.first { $0.stream === connection }?.index
    }

    // MARK: - ConnectionDelegate

    func connectionDidConnect(_ connection: any ByteStream) {
        guard let index = index(of: connection) else { return }
        handle(.attemptConnected(index: index))
    }

    func connectionDidRead(_ connection: any ByteStream) {
        // Reading starts only after the winner is handed over; nothing to do before.
    }

    func connection(_ connection: any ByteStream, didEnd reason: ConnectionEnd) {
        connection.close()
        guard let index = index(of: connection) else { return }
        attempts.removeAll { $0.index == index }
        handle(.attemptFailed(index: index, end: reason))
    }
}
