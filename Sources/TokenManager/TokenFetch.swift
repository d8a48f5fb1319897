import EventLoop

/// A single token fetch, without caching or refresh: for `token-sidecar token --credential NAME`.
public enum TokenFetch {
    /// Fetches one token. Call on `loop`'s thread; `completion` runs there, once, with the token
    /// (its `expiresAt` is the usable-until instant) or an error a person can read (the OAuth
    /// error code and description, or the network error).
    ///
    /// - Parameters:
    ///   - transport: default: an ``HTTPTokenTransport`` on `loop` with `timeout`.
    ///   - defaultLifetime: the lifetime when the response gives none.
    public static func once(_ request: TokenEndpointRequest, on loop: EventLoop, transport: (any TokenTransport)? = nil,
                            timeout: Duration = .seconds(10), defaultLifetime: Duration = .seconds(3600),
                            clock: any TokenClock = SystemTokenClock(),
                            _ completion: @escaping (Result<AccessToken, TokenFetchError>) -> Void) {
        once(.fixed(request), on: loop, transport: transport, timeout: timeout, defaultLifetime: defaultLifetime,
             clock: clock, completion)
    }

    /// Fetches one token with the next request of `source` (see the overload taking a request);
    /// when the source cannot make one (an unusable key or assertion file), `completion` gets
    /// that error on `loop` and nothing is sent.
    public static func once(_ source: TokenRequestSource, on loop: EventLoop, transport: (any TokenTransport)? = nil,
                            timeout: Duration = .seconds(10), defaultLifetime: Duration = .seconds(3600),
                            clock: any TokenClock = SystemTokenClock(),
                            _ completion: @escaping (Result<AccessToken, TokenFetchError>) -> Void) {
        let transport = transport ?? HTTPTokenTransport(loop: loop, timeout: timeout)
        let startedAt = clock.now
        do {
            try TokenRequestSender.send(source, via: transport) { sent, result in
                _ = transport  // keep the transport alive until the answer
                let outcome = result.mapError { TokenFetchError(.transport($0)) }.flatMap {
                    TokenResponseParser.parse($0, defaultLifetime: defaultLifetime, wallClock: clock.wallClockSeconds,
                                              binding: sent.binding, field: sent.tokenField)
                }
                completion(outcome.map {
                    IssuedToken(value: $0.value, issuedAt: startedAt, lifetime: $0.lifetime, binding: $0.binding).token
                })
            }
        } catch {
            LoopBound(completion, on: loop).run { $0(.failure(error)) }
        }
    }
}
