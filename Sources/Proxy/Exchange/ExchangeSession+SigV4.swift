import AWSSigning
import Config
import EventLoop
import HTTP1
import TokenManager

/// A `sigv4` route's requests (issue 67): refused or accepted from the head as it is routed,
/// signed with the real keys as the head goes upstream, once the body whose hash it may need is
/// staged. Out of line: every other route never runs this code.
extension ExchangeSession {
    /// What the request is re-signed as, or the refusal (nothing forwarded, no key used).
    /// A request whose body the sidecar must hash (no `x-amz-content-sha256`) needs a length:
    /// its body is held whole before the head can go.
    @inline(never)
    func checkSigV4(_ head: borrowing RequestHead, _ settings: SigV4RouteSettings) -> Result<SigV4Request, ProxyError> {
        let decided = SigV4Policy.decide(head, settings: settings)
        if case .success(let request) = decided, request.needsBodyHash, head.framing == .chunked || head.framing == .untilClose {
            return .failure(ProxyError(status: 411, type: "http_request_error",
                                       message: "a signed request without x-amz-content-sha256 needs a Content-Length (the sidecar hashes its body to sign it)"))
        }
        return decided
    }

    /// Signs the exchange's head with the token's keys, over `body` (staged whole) when the app
    /// declared no payload hash; the head then goes on as it is. (A token without keys never
    /// gets here: ``signable(_:_:)`` made it no token, when it was looked up and when it
    /// replaced a rejected one.)
    @inline(never)
    func signHead(_ io: ExchangeIO, _ request: SigV4Request, body: EventBuffer) {
        guard let keys = io.token?.aws else { return }
        let payloadHash = request.contentSHA256
            ?? (body.isEmpty ? SigV4Signer.emptyPayloadHash : body.withChunks { SigV4Body.hashHex(chunks: $0) })
        let timestamp = SigV4Signer.timestamp(epochSeconds: Int(SystemTokenClock().wallClockSeconds))
        let scope = SigV4Scope(date: String(timestamp.prefix(8)), region: request.scope.region, service: request.scope.service)
        var plan = SigV4Plan(credentials: keys, scope: scope, appSigned: request.appSigned, payloadHash: payloadHash, timestamp: timestamp,
                             host: io.decision.hostField, normalizePath: request.normalizePath)
        plan.sendsPayloadHash = request.contentSHA256 == nil && !request.normalizePath
        io.signHead(SigV4Edit.apply(io.head, plan))
    }

    /// A `sigv4` route's token must carry AWS keys: one that does not (a damaged shared entry)
    /// counts as no token, so the request is refused rather than sent on with the app's
    /// placeholder signature.
    @inline(__always)
    func signable(_ token: AccessToken?, _ io: ExchangeIO) -> AccessToken? {
        guard io.isSigned, let token, token.aws == nil else { return token }
        return nil
    }
}
