import Tracing

/// What every request carries while tracing is on, sampled or not: the server span's context
/// and the attempts' ids, so the upstream's `traceparent` passes the trace and its sampling
/// decision on. A plain value in the exchange's I/O record: an unsampled request allocates
/// nothing (what a sampled one records is a ``RequestTrace``).
struct TracePropagation {
    /// The request's server span (inactive: all zero).
    private(set) var server = SpanContext(traceID: TraceID(high: 0, low: 0), spanID: SpanID(0), sampled: false)
    /// Attempts so far.
    private(set) var attempts: UInt64 = 0
    /// Whether tracing is on for the request: its upstream gets a `traceparent` of the sidecar's.
    private(set) var active = false
    /// Whether the app's `tracestate` goes on (it came with a valid parent of the app's).
    private(set) var keepTraceState = false

    /// Inactive: tracing is off.
    init() {}

    /// Active for the request whose server span is `server`.
    init(server: SpanContext, keepTraceState: Bool) {
        self.server = server
        self.keepTraceState = keepTraceState
        active = true
    }

    /// The next attempt: its span (the upstream's parent) and how the trace fields are written.
    /// Its id is the server span's mixed with the attempt number (SplitMix64's finalizer):
    /// unique within the trace without a generator per request.
    mutating func nextAttempt() -> TraceFieldRewrite {
        attempts += 1
        var mixed = server.spanID.value &+ attempts &* 0x9E37_79B9_7F4A_7C15
        mixed = (mixed ^ (mixed >> 30)) &* 0xBF58_476D_1CE4_E5B9
        mixed = (mixed ^ (mixed >> 27)) &* 0x94D0_49BB_1331_11EB
        mixed ^= mixed >> 31
        let context = SpanContext(traceID: server.traceID, spanID: SpanID(mixed == 0 ? 1 : mixed), sampled: server.sampled)
        return TraceFieldRewrite(traceParent: context, keepTraceState: keepTraceState)
    }
}
