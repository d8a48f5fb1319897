import EventLoop
import HTTP1
import HTTPMessage
import TokenManager

/// The bytes and handles of the exchange under way on a client session: what the ``Exchange``
/// state machine decides about, without deciding anything itself. Exists exactly while an
/// exchange does (the session holds `nil` between requests), so none of its fields has a
/// meaning that depends on the phase.
final class ExchangeIO {
    /// The client's request head.
    private(set) var head: RequestHead
    /// Where the head's storage goes back to when the exchange is over. (Strong: an unowned
    /// reference costs more per exchange, and the exchange ends long before its worker.)
    private let context: WorkerContext
    /// Where it goes and which credential it uses, as routed. (A `let`: reading it retains
    /// nothing. On a route presenting the credential's certificate, ``target`` follows the token.)
    let decision: RouteDecision
    /// On a route presenting the credential's certificate: the upstream made with the
    /// certificate the current token is bound to. `nil` on every other route.
    private(set) var boundTarget: UpstreamTarget?
    /// When the head was complete, in ``Timer/monotonicNow()`` nanoseconds (for the duration
    /// metric and the access log).
    let startedAt: UInt64
    /// The injected token (replaced by a replay). On a route presenting the credential's
    /// certificate, the upstream becomes the one made with the certificate this token is bound to.
    var token: AccessToken? {
        didSet {
            if let bound = decision.certificateBound {
                let made = bound.target(for: token?.binding?.certificate)
                // A decision that requires HTTP/2 (a gRPC call to an `auto` route) requires it of
                // the certificate's target too.
                boundTarget = decision.target.http == .h2 && made.http == .negotiated ? made.asHTTP2 : made
            }
        }
    }
    /// Where the request goes: the routed target, or the one bound to the token's certificate.
    var target: UpstreamTarget { boundTarget ?? decision.target }
    /// On a route with per-request tokens: which one this request uses (its scope set, audience,
    /// caller's fingerprint).
    var variant: TokenVariantKey?
    /// The upstream connection in use, if any.
    var upstream: UpstreamConnection? {
        didSet { upstreamReference = upstream.map(UnretainedReference.init) }
    }
    /// ``upstream``, kept alive by it, for ``withUpstream(_:)``.
    private var upstreamReference: UnretainedReference<UpstreamConnection>?

    /// Calls `body` with the upstream connection in use, if any, without retaining it around the
    /// call (a look through ``upstream``, a stored `var`, retains and releases it: two atomic
    /// operations, about a dozen times per request). Only for calls that neither end it nor
    /// take it from the exchange: its buffers and state, its timeouts and read-ahead.
    @inline(__always)
    func withUpstream<Result>(_ body: (UpstreamConnection) -> Result) -> Result? {
        upstreamReference?.with(body)
    }
    /// Request body bytes staged while queued for a connection (the worker's scratch buffer is
    /// shared); non-nil exactly while queued (the worker's ``WorkerContext/noQueuedBody`` when
    /// none were staged: most queued requests end with their head).
    var queuedBody: OwnedEventBuffer?
    /// Request body bytes collected before a connection is taken (see ``Exchange/collectLimit``).
    var heldBody: OwnedEventBuffer?
    /// Decodes the client's request body framing and produces the upstream's.
    var requestRelay: BodyRelay
    /// The request's body is an HTTP/2 stream's of unknown length going to an HTTP/2 upstream:
    /// unframed all the way, its end told to the upstream's stream apart from its bytes
    /// (``UpstreamConnection/endRequestBody()``).
    let requestEndsWithStream: Bool
    /// The response goes to an HTTP/2 app's stream unframed, ended by the exchange's finish
    /// (``HTTP2OutboundMessage/Phase/untilEnd``): set as the relay starts.
    var responseEndsAppStream = false
    /// Bytes of this request (head and body) queued toward the current upstream connection.
    var requestQueued = 0
    /// The final response head from the backend, once parsed.
    var responseHead: UpstreamResponse?
    /// That head's response has no body by rule (to a HEAD, a 204, a 304): its connection is
    /// peeked at before a hand-over (``UpstreamPool/release(_:bodilessResponse:)``). A flag of
    /// its own: reading it through the optional head copied the head at every release.
    var responseBodiless = false
    /// Decodes the backend's response body framing and produces the client's.
    var responseRelay = BodyRelay(framing: .none, chunkedOutput: false, forwardTrailers: true)
    /// The response bytes the client has not taken yet, once it fell behind (see ``ResponseSpool``).
    var spool: ResponseSpool?
    /// The response is paused on the client while holding the upstream (marked stalled in the
    /// pool, ``UpstreamPoolState/leaseStalled(_:now:)``).
    var stalled = false
    /// What ``ExchangeSession/setClocks(_:readingBody:responseTimer:)`` last applied the timeouts for: whether the
    /// request was complete, and to which upstream (connected or not); it does nothing while
    /// these stay the same (it is called at several points of every exchange).
    var timeoutsAppliedFor: (requestComplete: Bool, upstream: ObjectIdentifier?, connected: Bool)?
    /// The protocol the request switches to when the backend agrees (a `101`): one the route
    /// allows, asked for by a bodyless HTTP/1.1 request. Nil for every other request.
    var upgrade: UpgradeProtocol?
    /// On a `sigv4` route: what the request is re-signed as (``SigV4Policy``); signed as it is
    /// sent, when the body it may need to hash is staged (``signHead(_:)``).
    var sigv4: SigV4Request? { didSet { isSigned = sigv4 != nil } }
    /// Whether ``sigv4`` is set, as a Bool: testing the optional itself copies its fields
    /// (~130 instructions on every request's token lookup).
    private(set) var isSigned = false
    /// What the route's rules decided, when it has rules (its audit record says it).
    var rules: RuleCheck.Recorded?
    /// The normalized path the rules checked, when it is not the one the head holds (a route
    /// that only audits forwards the path as sent).
    var rulesPath: String?
    /// The limit it went over on a route that only audits (its audit record says it).
    var overLimit: LimitVerdict.Kind?
    /// The client-facing `101` head, between reading it and switching protocols.
    /// The interim (1xx) response head last read, for ``ExchangeSession/forwardInterim(_:toClient:)``.
    var interimHead: (status: Int, reason: String)?
    var switchingHead: [UInt8]?
    /// The request's trace ids and attempts, while tracing is on (inactive otherwise).
    var propagation = TracePropagation()
    /// What the request's spans record, when its trace is sampled.
    var trace: RequestTrace?
    /// Whether the response head (and what followed) has been handed to the client's output;
    /// until then it is staged in the worker's scratch buffer and can still be replaced by a 502.
    var responseCommitted = false

    /// `streamedBody`: the body is an HTTP/2 app stream's of unknown length, ended by the stream
    /// (told to the relay apart from its bytes): unframed to an HTTP/2 upstream, chunked to any other.
    init(head: consuming RequestHead, decision: consuming RouteDecision, context: WorkerContext, streamedBody: Bool = false) {
        // The head is read first and stored last, so it moves into the record: stored first and
        // read after, it was retained for the store and released at the end, and that retain
        // (right after the record's fields were initialized) was one of a stream's costliest.
        let framing = head.framing
        if streamedBody {
            let toHTTP2 = decision.target.http == .h2
            self.requestRelay = BodyRelay(untilMessageEnd: !toHTTP2, forwardTrailers: false)
            self.requestEndsWithStream = toHTTP2
        } else {
            self.requestRelay = BodyRelay(framing: framing, chunkedOutput: framing == .chunked, forwardTrailers: false)
            self.requestEndsWithStream = false
        }
        self.context = context
        self.decision = decision
        self.startedAt = Timer.monotonicNow()
        self.head = head
    }

    /// Replaces the head with its signed form (``SigV4Edit``): what every later send (a retry on
    /// a fresh connection) starts from, and signs again.
    func signHead(_ signed: consuming RequestHead) {
        head = signed
    }

    deinit {
        // The head is done with (unless something else still holds it): its arrays hold the
        // next request's head.
        if let storage = RequestHead.reclaimStorage(&head) { context.recycle(storage) }
    }
}
