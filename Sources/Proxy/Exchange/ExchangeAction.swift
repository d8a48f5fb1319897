/// What the session does after an ``Exchange`` event. Exactly one per event.
enum ExchangeAction: Equatable {
    /// Nothing.
    case none
    /// Ask the route's credential for its current token (waiting, bounded, if there is none).
    case lookUpToken
    /// Validate and stage the body bytes already buffered, then report ``Exchange/bodyStaged(_:stagedBytes:heldBytes:copy:)``
    /// (`copy`: with a copy of the staged bytes: the request may be sent again).
    case stageBody(copy: Bool)
    /// A chunked body has not started: arm the body-start timer (`clientHeader`) and wait for
    /// more client bytes (said once per wait: later bytes of the size line do not restart it).
    case waitForBody
    /// Stop the body-start timer, keep the staged body bytes with the session and wait (bounded
    /// by `bodyIdle`) for more: the body is neither complete nor ``Exchange/collectLimit``
    /// bytes long yet.
    case holdBody
    /// The body wait is over (stop the body-start timer): take a connection from the pool
    /// (`checkStale`: the request could not be retried if a reused connection turned out
    /// closed); pause reading the client when staging filled up.
    case acquireUpstream(checkStale: Bool, pauseClient: Bool)
    /// The request is queued for a connection: arm the queue timer (`connect`), then let the
    /// pool take back a connection that a client which stopped reading holds.
    case armQueueTimer
    /// The exchange has no use for the connection the pool handed it: give it back.
    case declineUpstream
    /// Write the request head and the staged body to the assigned upstream, then apply the
    /// clocks as ``setClocks(readingBody:responseTimer:)`` says and, for a request that waited
    /// in the pool's queue, report ``Exchange/queuedRequestSent()``. (The clocks ride on the
    /// send: a separate action per request cost a dispatch and ~300 instructions.)
    case send(readingBody: Bool, responseTimer: Bool)
    /// The whole request is upstream: apply the exchange's clocks
    /// (``Exchange/clocks(upstreamConnected:)``).
    case requestComplete
    /// Set the connections' inactivity timeouts for this phase (`readingBody`: the client's
    /// body is still coming, so its read side is timed by `bodyIdle`), and run the
    /// response-head timer (`responseHeaders`) or stop it.
    case setClocks(readingBody: Bool, responseTimer: Bool)
    /// Pause reading the client (the upstream is not keeping up).
    case pauseClient
    /// Pause reading the upstream (the client is not keeping up and the spool has no room).
    case pauseUpstream
    /// The client is not keeping up: send the rest of the response through a spool file, so the
    /// backend can finish sending (and its connection go back to the pool).
    case spoolResponse
    /// The whole response is spooled: dispose of the upstream as said and go on serving the
    /// client from the spool.
    case releaseUpstream(UpstreamDisposal)
    /// A 401 is parked: stop the response-head timer and reading the upstream, and ask the
    /// credential for a different token.
    case holdRejection
    /// Stop the response-head timer, write the response head to the client and relay the
    /// body; `reportRejection`: tell the
    /// credential its token was rejected first (the 401 is passed on); `keepClient`: the head
    /// says the connection stays open.
    case relay(reportRejection: Bool, keepClient: Bool)
    /// Move what the upstream has buffered toward the client.
    case pumpResponse
    /// The client caught up: deliver from the spool if there is one, resume reading the
    /// backend and relay what it has buffered.
    case resumeResponse
    /// Top up the client's output from the spool.
    case deliverSpool
    /// The backend closed and its close ends the body: finish the client's framing (the last
    /// chunk), then report ``Exchange/responseEndedAtClose(clean:undelivered:)``.
    case endBodyAtClose
    /// Pass an interim (1xx) response on to the client when `toClient`, and restart the
    /// response-head clock.
    case forwardInterim(toClient: Bool)
    /// The backend answered `101 Switching Protocols` to an upgrade: write the `101` to the
    /// client, take the upstream connection out of the pool, and relay bytes both ways until
    /// either side ends (the token counts as accepted, as with a 2xx).
    case switchProtocols
    /// Read the next request heads from the client's input.
    case readRequests
    /// Read the response head from the upstream's input.
    case readResponseHead
    /// Move request body bytes from the client to the upstream (`copy`: keeping a copy of
    /// them, reported with ``Exchange/requestBodyForwarded(_:movedBytes:copy:)``).
    case pumpRequest(copy: Bool)
    /// The upstream took the queued request bytes (or a queued request was sent): resume
    /// reading the client and move more, as ``pumpRequest(copy:)``.
    case resumeRequest(copy: Bool)
    /// Discard the upstream and send the request again, exactly as it was — `body` is every
    /// byte of its body — with the new token (`checkStale`: the request could not be retried
    /// if a reused connection turned out closed). (Boxed, like ``fail(_:close:retryAfter:)``.)
    indirect case replay(checkStale: Bool, body: [UInt8])
    /// A resource server demanded a DPoP nonce: discard the upstream and send the request again,
    /// exactly as it was (`body`), with a fresh proof carrying the nonce (counted).
    indirect case nonceReplay(checkStale: Bool, body: [UInt8])
    /// Discard the upstream and send the request again, exactly as it was (`body`), on a fresh
    /// connection.
    indirect case retry(body: [UInt8])
    /// The exchange completed: dispose of the upstream as said, then keep or close the client.
    case finish(upstream: UpstreamDisposal, keepClient: Bool)
    /// Answer with a proxy-generated error (discarding the upstream), then keep or close the client.
    /// (Boxed: its payload, a message String among it, would make every action 33 bytes, passed
    /// in memory and loaded piece by piece at each dispatch; the other actions fit in registers.)
    indirect case fail(ExchangeFailure, close: Bool, retryAfter: Int?)
    /// Response bytes already left: discard the upstream, flush what is queued for the client
    /// and close without completing the message, so the client sees a truncated response.
    case truncate
    /// Close both sides now (the client left).
    case abort
    /// The client left with the rest of the response cheaper to read and drop than a new
    /// connection (``Exchange/clientEnded(cleanly:responseLeft:)``): count the exchange, hand the
    /// upstream to an ``UpstreamDrain`` (`awaitingHead`: no final head yet) that pools it once
    /// the response is complete, and close the client.
    case drainUpstream(awaitingHead: Bool)
    /// Close the client connection (between requests).
    case close
}

/// What happens to the upstream connection when an exchange finishes.
enum UpstreamDisposal: Equatable {
    /// Back to the pool: complete response, complete request, nothing beyond.
    case release
    /// Closed (the backend or the request said so, or the body ended with the connection).
    case close
    /// Closed and reported: the backend sent bytes beyond the response, which must reach no client.
    case discardUnexpectedBytes
}

/// Why an exchange failed with a proxy-generated response.
enum ExchangeFailure: Equatable {
    /// No token arrived within `tokenWait`.
    case tokenUnavailable
    /// The token server refused what the request asked for (a caller's subject, a scope).
    case tokenRefused
    /// The request body's chunked framing was malformed.
    case malformedBody
    /// A chunked body did not start within `clientHeader`.
    case bodyStartTimeout
    /// A body being collected made no progress for `bodyIdle`.
    case bodyIdleTimeout
    /// A locally answered request's body is larger than the server's limit.
    case bodyTooLarge
    /// A body the sidecar must hash to sign the request (``Exchange/Request/wholeBodyLimit``) is
    /// larger than that limit.
    case bodyTooLargeToHash(limit: Int)
    /// The upstream's connection limit and queue did not yield a connection.
    case connectionLimit
    /// The backend sent a malformed (or unrelayable) response; says what was wrong.
    case malformedResponse(String)
    /// No response head within `responseHeaders`.
    case responseTimeout
    /// The upstream connection ended before a response head.
    case upstreamEnd(UpstreamEnd, connected: Bool, partial: Bool)
}
