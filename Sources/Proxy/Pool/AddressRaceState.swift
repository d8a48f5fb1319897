import EventLoop

/// The decisions of a connection race over a name's addresses, as RFC 8305 §5 ("Happy
/// Eyeballs") describes it, as a value type: events in, actions out, no sockets, no timers.
/// ``AddressRacer`` performs the actions over sockets and a timer and reports what happened.
///
/// - Each address gets its own attempt, in the order given (``interleaved(_:)`` makes it).
/// - The next attempt starts when the attempt delay has elapsed since the previous one started
///   (``Action/armDelay``, then ``Event/delayElapsed``), or at once when an attempt fails.
/// - The first attempt to connect (TCP connected and, for TLS, handshaken and verified) wins;
///   every other attempt is closed.
/// - An attempt that fails on its TLS certificate, on the TLS protocol, or on a timeout ends
///   the race with that failure: another address of the same name will not fix it.
/// - When every attempt has failed, the race fails with the last failure (`refused` when there
///   was no address at all).
///
/// The race completes at most once, and never after ``Event/cancel``; once it is over, every
/// event is ignored. In every list of actions, ``Action/startAttempt(index:)`` comes last, so a
/// performer whose attempt cannot even start may report its failure at once, from inside it.
struct AddressRaceState {
    enum Event: Equatable {
        /// Start racing (once; ignored afterwards).
        case start
        /// The delay armed last has elapsed.
        case delayElapsed
        /// The attempt at this address connected.
        case attemptConnected(index: Int)
        /// The attempt at this address failed (or could not start: no socket, no TLS object).
        case attemptFailed(index: Int, end: ConnectionEnd)
        /// The owner gave up (its connect timeout, or it closed): close everything, report nothing.
        case cancel
    }

    /// How the race ended.
    enum Outcome: Equatable {
        /// The attempt at this address won; it is the only one left open.
        case connected(index: Int)
        /// Every attempt failed (the last failure), or one failed in a way another address
        /// cannot fix.
        case failed(ConnectionEnd)
    }

    /// What the performer does, in order.
    enum Action: Equatable {
        /// (Re)arm the attempt delay from now: when it elapses, report ``Event/delayElapsed``.
        case armDelay
        /// Start an attempt at the address at this index.
        case startAttempt(index: Int)
        /// Disarm the delay and close every attempt in flight but the one at `except`.
        case closeAttempts(except: Int?)
        /// Report the outcome to the owner.
        case complete(Outcome)
    }

    enum Phase: Equatable {
        /// Not started.
        case idle
        /// Attempts are under way or about to be.
        case racing
        /// Completed or cancelled.
        case over
    }

    /// How many addresses there are to try.
    let addressCount: Int
    private(set) var phase = Phase.idle
    /// The index of the next address to try.
    private(set) var next = 0
    /// Attempts started and neither failed nor closed, in the order they started.
    private(set) var inFlight: [Int] = []
    /// The most recent failure.
    private(set) var lastFailure: ConnectionEnd?

    init(addressCount: Int) {
        self.addressCount = addressCount
    }

    mutating func handle(_ event: Event) -> [Action] {
        switch (phase, event) {
        case (.idle, .start):
            phase = .racing
            return startNext()
        case (.idle, .cancel):
            phase = .over
            return []
        case (.racing, .delayElapsed):
            // A delay armed before the last attempt started at once may still elapse: nothing
            // is left to start then.
            return next < addressCount ? startNext() : []
        case (.racing, .attemptConnected(let index)):
            guard inFlight.contains(index) else { return [] }
            phase = .over
            inFlight = [index]
            return [.closeAttempts(except: index), .complete(.connected(index: index))]
        case (.racing, .attemptFailed(let index, let end)):
            guard let position = inFlight.firstIndex(of: index) else { return [] }
            inFlight.remove(at: position)
            lastFailure = end
            switch end {
            case .tlsCertificate, .tlsProtocol, .timeout:
                // Another address of the same name will not fix a certificate (nor a TLS mismatch).
                return fail(end)
            default:
                if next < addressCount { return startNext() }
                // Nothing left to start: the race is lost once the last attempt in flight fails.
                return inFlight.isEmpty ? fail(end) : []
            }
        case (.racing, .cancel):
            phase = .over
            inFlight.removeAll()
            return [.closeAttempts(except: nil)]
        case (.idle, .delayElapsed), (.idle, .attemptConnected), (.idle, .attemptFailed),
             (.racing, .start), (.over, _):
            return []
        }
    }

    /// Starts the next address's attempt, arming the delay first when another address is left.
    private mutating func startNext() -> [Action] {
        guard next < addressCount else { return fail(lastFailure ?? .refused) }
        let index = next
        next += 1
        inFlight.append(index)
        return next < addressCount ? [.armDelay, .startAttempt(index: index)] : [.startAttempt(index: index)]
    }

    private mutating func fail(_ end: ConnectionEnd) -> [Action] {
        phase = .over
        inFlight.removeAll()
        return [.closeAttempts(except: nil), .complete(.failed(end))]
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
}
