import EventLoop

/// Everything a client connection decides: an intercepted tunnel's TLS handshake, the wait for
/// the next request (keep-alive, pipelining, drain), the rest of a head, errors answered before
/// any exchange exists, a request under way — proxied (``Exchange``, the per-request machine it
/// holds) or answered locally (``LocalAnswer``) —, a CONNECT answered for interception and the
/// app's first byte in it, and the head timer all of these use (`idle` between requests,
/// `clientHeader` for a head or a handshake).
///
/// A plain value type: ``ExchangeSession`` feeds it events (an HTTP/2 stream's session takes
/// only the head given, the exchange and the close) and performs the one ``Action`` each
/// returns; arming and stopping the timer are actions, and actions carry what they need (the
/// error to answer with, the tunnel to continue). Nothing here touches a stream or a clock
/// (`ClientConnectionStateMachineTests` drives every event in every state without a loop).
///
/// ```
///            start                         head complete         answer written (keep-alive)
///  handshaking ──────▶ idle ──(part of a head)──▶ readingHead ──▶ inRequest ────────────────────┐
///   (TLS tunnel)  ▲     ▲  └──────────── head complete ──────────────▲│ │ local request          │
///                 │     │                                            ││ ▼                        │
///                 │     │                                            ││ answeringLocally ──┐     │
///                 │     │              answers piled up unread: awaitingClientDrain ◀──────┘     │
///                 │     └────────────────────────────────────────────┼┴──────────────────────────┘
///                 │                                                  │ CONNECT intercepted
///                 │                                   answeringConnect ──(200 flushed)──▶ awaitingFirstByte
///                 │                                                                          │ first byte
///  a new session ◀┴──────────────────────────────── continue as TLS / as plaintext ◀─────────┘
///  every timer expiry, end, close or drain that ends the connection ──▶ closed
/// ```
///
/// The proxied request's machine is kept beside ``state`` (in `inRequest`) rather than as the
/// payload of a state: its events, a dozen per request, then change it in place instead of
/// taking it out of an enum and putting it back (a copy and a retain of its kept body each).
struct ClientConnectionStateMachine {
    /// The phases of a client connection.
    enum State: Equatable {
        /// An intercepted tunnel's TLS handshake is under way (timer: `clientHeader`).
        case handshaking
        /// Between requests (timer: `idle`).
        case idle
        /// Part of a request head has arrived (timer: `clientHeader`).
        case readingHead
        /// A request is being answered: routed to its ``Exchange`` (which has the timers now),
        /// refused with an error, or its answer being written.
        case inRequest
        /// A request the sidecar answers itself (a ``LocalServer``'s).
        case answeringLocally(LocalAnswer)
        /// Local answers to pipelined requests piled up unread: no request is read until the
        /// client has taken them.
        case awaitingClientDrain
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
        /// Answer `error` to the request read, then keep the connection for the next request
        /// (`keepClient`) or close it.
        case answer(ProxyError, keepClient: Bool)
        /// Count a head that never became a request (malformed, too large, or incomplete at its
        /// timer: nothing to log), answer `error` and close.
        case rejectHead(ProxyError)
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
        /// Read a locally answered request's body from the client's input (first writing
        /// `100 Continue` when `sendContinue`), then report ``localBodyCollected(_:)``.
        case collectLocalBody(sendContinue: Bool)
        /// Hand the complete request to the local responder (bounded by the request's timer, run
        /// for the server's idle timeout: ``timerFired()``).
        case answerLocally
        /// Write the local responder's answer, then report ``localAnswerWritten(backlogged:)``
        /// (`keepClient`) or close.
        case respondLocally(keepClient: Bool)
        /// A locally answered request failed: answer the failure and close.
        case failLocally(ExchangeFailure)
        /// Stop reading the client (its unread answers piled up).
        case pauseClient
        /// Read the client again: its next request may start (the head timer is armed as
        /// ``requestEnded(draining:inputEmpty:)`` says), and read the requests already buffered.
        case resumeRequests
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
    /// The machine of the proxied request under way (in ``State/inRequest``); idle otherwise.
    private(set) var exchange = Exchange()
    /// The origin of the intercepted tunnel this connection carries requests of, if any.
    let intercepted: InterceptedOrigin?

    /// A connection just accepted (or continued from a tunnel): `handshaking` when it is the TLS
    /// server side of an intercepted tunnel.
    init(intercepted: InterceptedOrigin? = nil, handshaking: Bool = false) {
        self.intercepted = intercepted
        state = handshaking && intercepted != nil ? .handshaking : .idle
    }

    // MARK: - waiting for requests

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
    /// (a draining process closes a connection with nothing more to read; a pipelined request
    /// already buffered is still answered).
    mutating func requestEnded(draining: Bool, inputEmpty: Bool) -> Action {
        switch state {
        case .inRequest, .idle, .readingHead: return awaitNextRequest(draining: draining, inputEmpty: inputEmpty)
        default: return .none
        }
    }

    private mutating func awaitNextRequest(draining: Bool, inputEmpty: Bool) -> Action {
        if draining && inputEmpty {
            close()
            return .close
        }
        state = .idle
        return .armHeadTimer(.idle)
    }

    /// A request whose head was read elsewhere (an HTTP/2 stream's, translated by its
    /// connection) is answered at once: no head to wait for, no head timer. False when the
    /// connection is not waiting for a request (it never started, or it ended).
    mutating func headGiven() -> Bool {
        guard state == .idle else { return false }
        state = .inRequest
        return true
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
            state = .inRequest
            return .stopHeadTimer
        default:
            return .none
        }
    }

    /// The bytes buffered cannot be a request head (malformed, too large, too many fields).
    mutating func headMalformed(_ error: ProxyError) -> Action {
        switch state {
        case .idle, .readingHead:
            close()
            return .rejectHead(error)
        default:
            return .none
        }
    }

    /// The head timer expired.
    mutating func headTimerFired() -> Action {
        switch state {
        case .handshaking:
            close()
            return .abort(interceptFailure: intercepted.map { InterceptFailure(origin: $0, reason: .timeout) })
        case .idle:
            close()
            return .close
        case .readingHead:
            close()
            return .rejectHead(ProxyError(status: 408, type: "http_request_error",
                                          message: "the request head did not arrive completely within timeouts.clientHeader"))
        default:
            return .none
        }
    }

    /// The process drains: a connection between requests, with nothing more to read, closes now
    /// (a busy one closes after its answer, ``requestEnded(draining:inputEmpty:)``).
    mutating func drainBegan(inputEmpty: Bool) -> Action {
        guard state == .idle && inputEmpty else { return .none }
        close()
        return .close
    }

    // MARK: - a request under way

    /// The head read is refused with `error` before any exchange starts (no route, a loop, a
    /// bad target; `request`: what is known of it, `nil` when its head could not be parsed).
    /// The connection stays only for a bodyless request that asked to keep it: the bytes after
    /// any other could be a body, or not HTTP at all (after a CONNECT head).
    mutating func refused(_ error: ProxyError, request: Exchange.Request?, connect: Bool = false) -> Action {
        switch state {
        case .idle, .readingHead, .inRequest:
            let keepClient = !connect && request.map { $0.bodyless && $0.keepAlive } ?? false
            if keepClient { state = .inRequest } else { close() }
            return .answer(error, keepClient: keepClient)
        default:
            return .none
        }
    }

    /// The head read starts a proxied request: its exchange decides from here.
    mutating func startExchange(_ request: Exchange.Request) -> ExchangeAction {
        guard state == .inRequest else { return .none }
        return exchange.start(request)
    }

    /// An event of the exchange under way (a token, an upstream, a response, a timer): the
    /// exchange's decision, performed as it is.
    @inline(__always)
    mutating func exchangeEvent(_ event: (inout Exchange) -> ExchangeAction) -> ExchangeAction {
        event(&exchange)
    }

    /// The request is handed over to a tunnel of its own (a CONNECT allowed through): this
    /// session is done.
    mutating func tunnelStarted() {
        close()
    }

    // MARK: - a request answered locally

    /// The head read is answered by the local responder once its body is collected.
    /// `bodyTooLarge`: its Content-Length is above the limit (refused before reading the body,
    /// so before any `100 Continue`).
    mutating func localRequestStarted(_ request: Exchange.Request, bodyTooLarge: Bool) -> Action {
        guard state == .inRequest else { return .none }
        guard !bodyTooLarge else {
            close()
            return .failLocally(.bodyTooLarge)
        }
        state = .answeringLocally(LocalAnswer(request: request))
        // RFC 9110 §10.1.1: the server that reads the body says 100 Continue (an HTTP/1.0
        // client never gets an interim response; a bodyless request needs none).
        return .collectLocalBody(sendContinue: request.expectsContinue && request.http11 && !request.bodyless)
    }

    /// The session read what it could of a local request's body.
    mutating func localBodyCollected(_ progress: LocalAnswer.BodyProgress) -> Action {
        guard case .answeringLocally(var answer) = state, answer.phase == .collecting else { return .none }
        switch progress {
        case .needMore:
            return .none
        case .complete:
            answer.phase = .answering(clientEnded: false)
            state = .answeringLocally(answer)
            return .answerLocally
        case .tooLarge:
            close()
            return .failLocally(.bodyTooLarge)
        case .malformed:
            close()
            return .failLocally(.malformedBody)
        }
    }

    /// The local responder answered (`closeRequested`: its answer says `Connection: close`).
    mutating func localAnswered(closeRequested: Bool) -> Action {
        guard case .answeringLocally(let answer) = state, case .answering(let clientEnded) = answer.phase else { return .none }
        let keepClient = answer.request.keepAlive && !clientEnded && !closeRequested
        if keepClient { state = .inRequest } else { close() }
        return .respondLocally(keepClient: keepClient)
    }

    /// A local answer that keeps the connection was written; `backlogged`: the client's output
    /// is above its high watermark (it pipelines requests without reading the answers), so it
    /// is not read until it catches up.
    mutating func localAnswerWritten(backlogged: Bool) -> Action {
        guard state == .inRequest else { return .none }
        guard backlogged else { return .resumeRequests }
        state = .awaitingClientDrain
        return .pauseClient
    }

    /// The request's timer expired: while answering locally it is the responder's (it did not
    /// answer within the server's idle timeout: the connection is dropped); otherwise the
    /// exchange's, which knows which of its timers it ran.
    mutating func timerFired() -> Action {
        guard case .answeringLocally(let answer) = state else { return state == .closed ? .none : .toExchange }
        guard case .answering = answer.phase else { return .none }
        close()
        return .abort(interceptFailure: nil)
    }

    // MARK: - interception

    /// A CONNECT to an intercepting route was answered `200`.
    mutating func connectIntercepted(_ tunnel: InterceptedTunnel) -> Action {
        guard state == .inRequest else { return .none }
        exchange.close()
        state = .answeringConnect(tunnel)
        return .stopHeadTimer
    }

    /// The app's first byte in the tunnel (`nil`: it left without one).
    mutating func firstByte(_ byte: UInt8?) -> Action {
        guard case .awaitingFirstByte(let tunnel) = state else { return .none }
        close()
        guard let byte else { return .abort(interceptFailure: InterceptFailure(origin: tunnel.origin, reason: .endOfStream)) }
        guard byte == Self.tlsHandshakeRecord else { return .continueAsPlaintext(tunnel) }
        return tunnel.acceptsTLS ? .continueAsTLS(tunnel) : .refuseTLS(tunnel)
    }

    // MARK: - the client's stream

    /// The client has bytes to read: a local request's body, or the exchange's business (the
    /// next head between requests, a body on its way upstream).
    func clientReadable() -> Action {
        switch state {
        case .answeringLocally(let answer): return answer.phase == .collecting ? .collectLocalBody(sendContinue: false) : .none
        case .awaitingClientDrain, .answeringConnect, .awaitingFirstByte, .closed: return .none
        case .handshaking, .idle, .readingHead, .inRequest: return .toExchange
        }
    }

    /// Everything queued for the client was sent: after a CONNECT's `200`, wait for the app's
    /// first byte; after piled-up local answers, read requests again; otherwise the exchange's
    /// business.
    mutating func outputDrained() -> Action {
        switch state {
        case .answeringConnect(let tunnel):
            state = .awaitingFirstByte(tunnel)
            return .peekFirstByte
        case .awaitingClientDrain:
            state = .inRequest
            return .resumeRequests
        case .awaitingFirstByte, .answeringLocally, .closed:
            return .none
        case .handshaking, .idle, .readingHead, .inRequest:
            return .toExchange
        }
    }

    /// The client's stream ended (EOF, error, read timeout). While a tunnel is being set up, or
    /// its handshake is under way, the connection is dropped (and the app's refusal counted); a
    /// local request's body that stalls is a 408, and a client that half-closes after sending a
    /// whole local request still gets its answer; otherwise the exchange decides.
    mutating func clientEnded(_ reason: ConnectionEnd) -> Action {
        switch state {
        case .handshaking:
            close()
            return .abort(interceptFailure: intercepted.map { InterceptFailure(origin: $0, reason: reason) })
        case .answeringConnect:
            close()
            return .abort(interceptFailure: nil)
        case .awaitingFirstByte(let tunnel):
            close()
            return .abort(interceptFailure: InterceptFailure(origin: tunnel.origin, reason: reason))
        case .answeringLocally(var answer):
            if answer.phase == .collecting && reason == .timeout {
                close()
                return .failLocally(.bodyIdleTimeout)
            }
            if answer.phase == .answering(clientEnded: false) && reason == .endOfStream {
                answer.phase = .answering(clientEnded: true)
                state = .answeringLocally(answer)
                return .none
            }
            close()
            return .abort(interceptFailure: nil)
        case .awaitingClientDrain:
            close()
            return .abort(interceptFailure: nil)
        case .closed:
            return .none
        case .idle, .readingHead, .inRequest:
            return .toExchange
        }
    }

    /// The session closes or aborts for a reason of its own (an exchange's end, a shutdown).
    mutating func closed() {
        close()
    }

    private mutating func close() {
        state = .closed
        exchange.close()
    }
}
