/// Sends a credential's token request and, with DPoP, the one retry a nonce challenge calls for
/// (RFC 9449 §8): a `DPoP-Nonce` in any answer is remembered for the token server's origin, and
/// a `400 use_dpop_nonce` is answered by a new request (a fresh proof with that nonce) — once
/// per fetch, never in a loop.
enum TokenRequestSender {
    /// Makes the next request of `source` and sends it with `transport`. `completion` gets the
    /// request the response answers (the retry, after a challenge) and the outcome; it runs on
    /// the transport's loop, never inside this call. Throws, having sent nothing, when `source`
    /// cannot make a request.
    @discardableResult
    static func send(_ source: TokenRequestSource, via transport: any TokenTransport,
                     completion: @escaping (TokenEndpointRequest, Result<TokenHTTPResponse, TokenTransportError>) -> Void)
        throws(TokenFetchError) -> TokenEndpointRequest {
        let first = try source.next()
        transport.send(first) { result in
            guard let nonces = first.binding?.nonces, case .success(let response) = result else {
                completion(first, result)
                return
            }
            nonces.remember(from: response.fields, origin: first.origin)
            // Compared with the nonce this proof carried, not with the store before the answer:
            // a concurrent fetch may have stored the same new nonce first.
            let nonce = nonces.nonce(for: first.origin)
            guard demandsNonce(response), nonce != nil, nonce != first.sentNonce, let second = try? source.next() else {
                completion(first, result)
                return
            }
            nonces.countTokenEndpointRetry()
            transport.send(second) { result in
                if case .success(let response) = result { nonces.remember(from: response.fields, origin: second.origin) }
                completion(second, result)
            }
        }
        return first
    }

    /// Whether a token server's answer is a DPoP nonce challenge (`400` with the OAuth error
    /// `use_dpop_nonce`).
    static func demandsNonce(_ response: TokenHTTPResponse) -> Bool {
        guard response.status == 400, let body = TokenResponseBody.decode(response.body),
              case .string(let code) = body.error else { return false }
        return code == "use_dpop_nonce"
    }
}
