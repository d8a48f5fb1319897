import Tracing

/// How a managed credential's token fetches become spans: one `token fetch` client span per
/// attempt, the root of a trace of its own (one fetch serves many requests: each request
/// that waited for it links to it). Names the credential, grant and client authentication as
/// configured; never a secret, a token or an assertion.
public struct FetchTracing: Sendable {
    /// Where the spans go.
    public let tracer: Tracer
    /// The grant as configured (`client_credentials`, `token_exchange`, `mca`).
    public let grant: String
    /// The client authentication as configured (`client_secret_basic`, `private_key_jwt`, …).
    public let clientAuth: String

    /// Fetch tracing for one credential.
    public init(tracer: Tracer, grant: String, clientAuth: String) {
        self.tracer = tracer
        self.grant = grant
        self.clientAuth = clientAuth
    }

    /// The span name of every attempt.
    public static let spanName = "token fetch"

    /// A new attempt's context: a new trace, recorded whenever the sampler records anything
    /// (fetches are rare, and the requests that waited for one point at it).
    func newAttempt(ids: inout IDGenerator) -> SpanContext {
        SpanContext(traceID: ids.traceID(), spanID: ids.spanID(), sampled: tracer.sampler.recordsAny)
    }

    /// The finished span of one attempt.
    func record(_ context: SpanContext, credential: String, variant: String?, attempt: Int, endpoint: TokenEndpoint?,
                startNanos: UInt64, outcome: String, status: Int?, error: String?, sharedCache: Bool) {
        var attributes = [
            SpanAttribute("token_sidecar.credential", .string(credential)),
            SpanAttribute("token_sidecar.grant", .string(grant)),
            SpanAttribute("token_sidecar.client_auth", .string(clientAuth)),
            SpanAttribute("token_sidecar.attempt", .int(Int64(attempt))),
            SpanAttribute("token_sidecar.outcome", .string(outcome)),
            SpanAttribute("token_sidecar.shared_cache", .bool(sharedCache)),
        ]
        if let variant { attributes.append(SpanAttribute("token_sidecar.variant", .string(variant))) }
        if let endpoint {
            attributes.append(SpanAttribute("http.request.method", .string("POST")))
            attributes.append(SpanAttribute("server.address", .string(endpoint.host)))
            attributes.append(SpanAttribute("server.port", .int(Int64(endpoint.port))))
        }
        if let status { attributes.append(SpanAttribute("http.response.status_code", .int(Int64(status)))) }
        if let error { attributes.append(SpanAttribute("error.type", .string(error))) }
        tracer.end(SpanRecord(context: context, parentSpanID: nil, name: Self.spanName, kind: .client, startNanos: startNanos,
                              endNanos: Tracer.nowNanos(), attributes: attributes, status: error.map { .error($0) } ?? .unset))
    }
}
