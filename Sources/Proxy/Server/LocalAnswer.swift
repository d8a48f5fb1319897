/// A request the sidecar answers itself (a ``LocalServer``'s: the admin endpoints), as a state
/// of its connection (``ClientConnectionStateMachine/State/answeringLocally(_:)``): its body is
/// collected, then the local responder has it. No upstream, no token, no spool: the proxied
/// request's machine (``Exchange``) has none of these states.
struct LocalAnswer: Equatable {
    /// How far the request got.
    enum Phase: Equatable {
        /// Its body is being collected.
        case collecting
        /// The local responder has it; `clientEnded`: the client half-closed since (it still
        /// gets the answer, then the connection closes).
        case answering(clientEnded: Bool)
    }

    /// How far collecting the body got.
    enum BodyProgress: Equatable {
        /// The whole body is here.
        case complete
        /// More bytes are needed.
        case needMore
        /// The body is larger than the server's limit.
        case tooLarge
        /// The chunked framing was malformed.
        case malformed
    }

    /// What is known of the request (keep-alive, `Expect: 100-continue`, version).
    let request: Exchange.Request
    /// How far it got.
    var phase = Phase.collecting
}
