import EventLoop

/// Connects to the first of a name's addresses that answers, racing attempts as RFC 8305 §5
/// ("Happy Eyeballs") describes: each address gets its own attempt; the next attempt starts
/// ``attemptDelay`` after the previous one started, or at once when it fails; the first attempt
/// to complete (TCP connected and, for TLS, handshaken and verified) wins and every other one is
/// closed. A blackholed address (often IPv6) then costs 250 ms instead of the whole connect
/// timeout.
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
    /// The index of the next address to try.
    private var next = 0
    /// Attempts started and not yet failed.
    private var attempts: [any ByteStream] = []
    private var delayTimer: Timer?
    private var lastFailure: ConnectionEnd?
    private var completion: ((Outcome) -> Void)?

    /// Prepares a race over `addresses` (tried in this order; see ``interleaved(_:)``).
    /// `completion` runs once, on the loop, with the outcome; never after ``cancel()``.
    init(addresses: [SocketAddress], tls: (context: TLSClientContext, serverName: String)?, loop: EventLoop,
         attemptDelay: Duration = AddressRacer.defaultAttemptDelay,
         completion: @escaping (Outcome) -> Void) {
        self.addresses = addresses
        self.tls = tls
        self.loop = loop
        self.attemptDelay = attemptDelay
        self.completion = completion
    }

    /// Starts the first attempt.
    func start() {
        startNextAttempt()
    }

    /// Closes every attempt; the completion will not run.
    func cancel() {
        completion = nil
        closeAttempts()
    }

    /// RFC 8305 §4: alternates address families, starting with the family of the resolver's
    /// first answer, keeping the resolver's order within each family.
    static func interleaved(_ addresses: [SocketAddress]) -> [SocketAddress] {
        guard let first = addresses.first else { return [] }
        let preferred = addresses.filter { $0.isIPv6 == first.isIPv6 }
        let other = addresses.filter { $0.isIPv6 != first.isIPv6 }
        var result: [SocketAddress] = []
        result.reserveCapacity(addresses.count)
        for index in 0..<max(preferred.count, other.count) {
            if index < preferred.count { result.append(preferred[index]) }
            if index < other.count { result.append(other[index]) }
        }
        return result
    }

    private func startNextAttempt() {
        delayTimer?.suspend()
        while next < addresses.count {
            let address = addresses[next]
            next += 1
            guard let attempt = Connection.connect(to: address, tls: tls, on: loop, delegate: self) else {
                // No socket or TLS object for this one (resources): go on with the next.
                lastFailure = .socketError(errno: 0)
                continue
            }
            attempts.append(attempt)
            if next < addresses.count {
                if delayTimer == nil {
                    delayTimer = Timer(on: loop) { [unowned self] in startNextAttempt() }
                }
                delayTimer?.schedule(after: attemptDelay)
            }
            return
        }
        // Nothing left to start: the race is lost once the last attempt in flight fails.
        if attempts.isEmpty { finish(.failed(lastFailure ?? .refused)) }
    }

    private func finish(_ result: Outcome) {
        let completion = self.completion
        self.completion = nil
        closeAttempts()
        completion?(result)
    }

    private func closeAttempts() {
        delayTimer?.cancel()
        delayTimer = nil
        let losers = attempts
        attempts.removeAll()
        for attempt in losers { attempt.close() }
    }

    // MARK: - ConnectionDelegate

    func connectionDidConnect(_ connection: any ByteStream) {
        guard let index = attempts.firstIndex(where: { $0 === connection }) else { return }
        let winner = attempts.remove(at: index)
        winner.delegate = nil
        finish(.connected(winner))
    }

    func connectionDidRead(_ connection: any ByteStream) {
        // Reading starts only after the winner is handed over; nothing to do before.
    }

    func connection(_ connection: any ByteStream, didEnd reason: ConnectionEnd) {
        connection.close()
        guard let index = attempts.firstIndex(where: { $0 === connection }) else { return }
        attempts.remove(at: index)
        lastFailure = reason
        switch reason {
        case .tlsCertificate, .tlsProtocol, .timeout:
            // Another address of the same name will not fix a certificate (nor a TLS mismatch).
            finish(.failed(reason))
        default:
            startNextAttempt()
        }
    }
}
