import EventLoop

/// A client connection's own state, apart from the request it carries (``Exchange``): an
/// intercepted tunnel's TLS handshake, the wait for the next request (keep-alive), the rest of a
/// head, an exchange under way, a CONNECT answered for interception and the app's first byte in
/// it, the drain, and the one timer all of these use (the head timer: `idle` between requests,
/// `clientHeader` for a head or a handshake).
///
/// A plain value type: ``ClientSession`` feeds it events and performs the one ``Action`` each
/// returns; arming and stopping the timer are actions. Nothing here touches a stream or a clock
/// (`ClientConnectionStateMachineTests` drives every event in every state without a loop).
///
/// ```
///            start                         head complete            exchange ended (keep-alive)
///  handshaking ──────▶ idle ──(part of a head)──▶ readingHead ──▶ busy ─────────────────┐
///   (TLS tunnel)  ▲     ▲  └──────────── head complete ──────────────▲│                  │
///                 │     └────────────────────────────────────────────┼┴──────────────────┘
///                 │                                                  │ CONNECT intercepted
///                 │                                   answeringConnect ──(200 flushed)──▶ awaitingFirstByte
///                 │                                                                          │ first byte
///  a new session ◀┴──────────────────────────────── continue as TLS / as plaintext ◀─────────┘
///  every timer expiry, end, close or drain that ends the connection ──▶ closed
/// ```
struct ClientConnectionStateMachine: Equatable {
    /// The phases of a client connection.
    enum State: Equatable {
        /// An intercepted tunnel's TLS handshake is under way (timer: `clientHeader`).
        case handshaking
        /// Between requests (timer: `idle`).
        case idle
        /// Part of a request head has arrived (timer: `clientHeader`).
        case readingHead
        /// A request is being answered (its ``Exchange`` has the timers now).
        case busy
        /// A CONNECT to an intercepting route was answered; the `200` is queued.
        case answeringConnect(InterceptedTunnel)
        /// The `200` left; the app's first byte in the tunnel decides what it carries (timer:
        /// the stream's read timeout, `clientHeader`).
        case awaitingFirstByte(InterceptedTunnel)
        /// Closing or closed: every later event does nothing.
        case closed
    }

    /// What the session does after an event. Exactly one per event.
    enum Action: Equatable {
        /// Nothing.
        case none
        /// (Re)start the head timer with that timeout (read from the configuration when armed:
        /// a reload applies to the next wait).
        case armHeadTimer(HeadTimeout)
        /// Stop the head timer.
        case stopHeadTimer
        /// Close the connection after what is queued for it has left.
        case close
        /// Answer `error` (the connection closes after it).
        case answer(ProxyError)
        /// Drop everything now; `interceptFailure`: an intercepted tunnel the app broke off before
        /// its handshake or first byte, counted and logged for that origin with that reason.
        case abort(interceptFailure: InterceptFailure?)
        /// Wait for the app's first byte in the tunnel, without reading it.
        case peekFirstByte
        /// The tunnel carries TLS: hand the socket to a TLS server session for its origin.
        case continueAsTLS(InterceptedTunnel)
        /// The tunnel carries plaintext HTTP: a new session for its origin reads the same stream.
        case continueAsPlaintext(InterceptedTunnel)
        /// The app speaks TLS in a tunnel whose route sends plaintext upstream (weaker than the
        /// app's own connection): log it and drop the connection.
        case refuseTLS(InterceptedTunnel)
        /// Not the connection's: the event is the exchange's to decide.
        case toExchange
    }

    /// An intercepted tunnel that ended before the app spoke TLS or sent a byte.
    struct InterceptFailure: Equatable {
        /// The tunnel's origin.
        let origin: InterceptedOrigin
        /// Why it ended.
        let reason: ConnectionEnd
    }

    /// A CONNECT answered for interception: where the requests inside go, and how the app may
    /// speak there.
    struct InterceptedTunnel: Equatable {
        /// The tunnel's origin (the CONNECT's authority).
        let origin: InterceptedOrigin
        /// The TLS server side for that name (a leaf minted by the sidecar's CA).
        let server: TLSServerContext
        /// The route sends over TLS: an app may speak TLS in the tunnel (plaintext always may).
        let acceptsTLS: Bool

        static func == (lhs: InterceptedTunnel, rhs: InterceptedTunnel) -> Bool {
            lhs.origin == rhs.origin && lhs.server === rhs.server && lhs.acceptsTLS == rhs.acceptsTLS
        }
    }

    /// The timeouts the head timer runs.
    enum HeadTimeout: Equatable {
        /// `timeouts.idle`: between requests.
        case idle
        /// `timeouts.clientHeader`: for a head (or a handshake) to complete.
        case clientHeader
    }

    /// The first byte of a TLS record carrying a handshake message (RFC 8446 §5.1).
    static let tlsHandshakeRecord: UInt8 = 0x16

    private(set) var state: State
    /// The origin of the intercepted tunnel this connection carries requests of, if any.
    let intercepted: InterceptedOrigin?

    /// A connection just accepted (or continued from a tunnel): `handshaking` when it is the TLS
    /// server side of an intercepted tunnel.
    init(intercepted: InterceptedOrigin? = nil, handshaking: Bool = false) {
        self.intercepted = intercepted
        state = handshaking && intercepted != nil ? .handshaking : .idle
    }

    /// The session starts reading: the handshake, or the first request, must come in time (a
    /// draining process closes a connection that has nothing to read).
    mutating func start(draining: Bool, inputEmpty: Bool) -> Action {
        guard state == .handshaking else { return awaitNextRequest(draining: draining, inputEmpty: inputEmpty) }
        return .armHeadTimer(.clientHeader)
    }

    /// The intercepted tunnel's TLS handshake completed: from now on, as any connection.
    mutating func handshakeCompleted(draining: Bool, inputEmpty: Bool) -> Action {
        guard state == .handshaking else { return .none }
        return awaitNextRequest(draining: draining, inputEmpty: inputEmpty)
    }

    /// The request under way was answered and the connection stays open: the next one may come
    /// (a draining process closes a connection with nothing more to read).
    mutating func requestEnded(draining: Bool, inputEmpty: Bool) -> Action {
        switch state {
        case .busy, .idle, .readingHead: return awaitNextRequest(draining: draining, inputEmpty: inputEmpty)
        default: return .none
        }
    }

    private mutating func awaitNextRequest(draining: Bool, inputEmpty: Bool) -> Action {
        if draining && inputEmpty {
            state = .closed
            return .close
        }
        state = .idle
        return .armHeadTimer(.idle)
    }

    /// Part of a head is buffered: from its first byte it has `clientHeader` to complete.
    mutating func headIncomplete() -> Action {
        guard state == .idle else { return .none }
        state = .readingHead
        return .armHeadTimer(.clientHeader)
    }

    /// A whole head was read: its request is being answered.
    mutating func headComplete() -> Action {
        switch state {
        case .idle, .readingHead:
            state = .busy
            return .stopHeadTimer
        default:
            return .none
        }
    }

    /// The head timer expired.
    mutating func headTimerFired() -> Action {
        switch state {
        case .handshaking:
            state = .closed
            return .abort(interceptFailure: intercepted.map { InterceptFailure(origin: $0, reason: .timeout) })
        case .idle:
            state = .closed
            return .close
        case .readingHead:
            state = .closed
            return .answer(ProxyError(status: 408, type: "http_request_error",
                                      message: "the request head did not arrive completely within timeouts.clientHeader"))
        default:
            return .none
        }
    }

    /// The process drains: a connection between requests, with nothing more to read, closes now
    /// (a busy one closes after its answer, ``requestEnded(draining:inputEmpty:)``).
    mutating func drainBegan(inputEmpty: Bool) -> Action {
        guard state == .idle && inputEmpty else { return .none }
        state = .closed
        return .close
    }

    /// A CONNECT to an intercepting route was answered `200`.
    mutating func connectIntercepted(_ tunnel: InterceptedTunnel) -> Action {
        guard state == .busy else { return .none }
        state = .answeringConnect(tunnel)
        return .stopHeadTimer
    }

    /// Everything queued for the client was sent: after a CONNECT's `200`, wait for the app's
    /// first byte; otherwise the exchange's business.
    mutating func outputDrained() -> Action {
        switch state {
        case .answeringConnect(let tunnel):
            state = .awaitingFirstByte(tunnel)
            return .peekFirstByte
        case .awaitingFirstByte, .closed:
            return .none
        default:
            return .toExchange
        }
    }

    /// The app's first byte in the tunnel (`nil`: it left without one).
    mutating func firstByte(_ byte: UInt8?) -> Action {
        guard case .awaitingFirstByte(let tunnel) = state else { return .none }
        state = .closed
        guard let byte else { return .abort(interceptFailure: InterceptFailure(origin: tunnel.origin, reason: .endOfStream)) }
        guard byte == Self.tlsHandshakeRecord else { return .continueAsPlaintext(tunnel) }
        return tunnel.acceptsTLS ? .continueAsTLS(tunnel) : .refuseTLS(tunnel)
    }

    /// The client's stream ended (EOF, error, read timeout). While a tunnel is being set up, or
    /// its handshake is under way, the connection is dropped (and the app's refusal counted);
    /// otherwise the exchange decides.
    mutating func clientEnded(_ reason: ConnectionEnd) -> Action {
        switch state {
        case .handshaking:
            state = .closed
            return .abort(interceptFailure: intercepted.map { InterceptFailure(origin: $0, reason: reason) })
        case .answeringConnect:
            state = .closed
            return .abort(interceptFailure: nil)
        case .awaitingFirstByte(let tunnel):
            state = .closed
            return .abort(interceptFailure: InterceptFailure(origin: tunnel.origin, reason: reason))
        case .closed:
            return .none
        case .idle, .readingHead, .busy:
            return .toExchange
        }
    }

    /// The session closes or aborts for a reason of its own (an exchange's end, a shutdown).
    mutating func closed() {
        state = .closed
    }
}
