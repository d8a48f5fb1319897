/// What identifies a span across processes: the W3C `traceparent` fields. A plain value
/// (no reference inside), so copying one costs no reference counting; the vendor
/// `tracestate`, a string, travels beside it where it is needed (``SpanRecord/traceState``).
public struct SpanContext: Sendable, Hashable {
    /// The trace the span belongs to.
    public var traceID: TraceID
    /// The span's own id.
    public var spanID: SpanID
    /// Whether the trace is sampled (the `sampled` trace flag, bit 0).
    public var sampled: Bool
    /// Whether the context came from another process (a `traceparent` the app sent).
    public var isRemote: Bool

    /// A span context.
    public init(traceID: TraceID, spanID: SpanID, sampled: Bool, isRemote: Bool = false) {
        self.traceID = traceID
        self.spanID = spanID
        self.sampled = sampled
        self.isRemote = isRemote
    }

    /// The W3C trace flags byte.
    public var flags: UInt8 { sampled ? 1 : 0 }
}
