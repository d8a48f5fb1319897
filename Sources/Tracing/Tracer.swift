#if canImport(Glibc)
import Glibc
#endif

/// Where finished spans go: the batching exporter (or a test's collector). Called from any
/// thread; must not block.
public protocol SpanSink: Sendable {
    /// Takes one finished, sampled span.
    func submit(_ span: SpanRecord)
}

/// The process's tracing switchboard: the sampler that decides which spans are recorded and
/// the sink they go to. Nil where tracing is off, so the request path checks one optional.
public final class Tracer: Sendable {
    /// Decides which new spans are recorded.
    public let sampler: Sampler
    /// Receives the recorded spans.
    public let sink: any SpanSink

    /// A tracer sending what `sampler` keeps to `sink`.
    public init(sampler: Sampler, sink: any SpanSink) {
        self.sampler = sampler
        self.sink = sink
    }

    /// The context of a new span: a child of `parent` (same trace, the parent's `tracestate`)
    /// or the root of a new trace, sampled as the sampler decides.
    public func newSpan(parent: SpanContext?, ids: inout IDGenerator) -> SpanContext {
        let traceID = parent?.traceID ?? ids.traceID()
        return SpanContext(traceID: traceID, spanID: ids.spanID(), sampled: sampler.shouldSample(traceID: traceID, parent: parent),
                           traceState: parent?.traceState)
    }

    /// A new span's context under an already-decided local parent (a client span under the
    /// request's server span): it shares the parent's decision.
    public static func child(of parent: SpanContext, ids: inout IDGenerator) -> SpanContext {
        SpanContext(traceID: parent.traceID, spanID: ids.spanID(), sampled: parent.sampled, traceState: parent.traceState)
    }

    /// Sends `span` to the sink when its trace is sampled.
    @inline(__always)
    public func end(_ span: SpanRecord) {
        if span.context.sampled { sink.submit(span) }
    }

    /// Now, in nanoseconds since 1970 (span timestamps are wall-clock times).
    public static func nowNanos() -> UInt64 {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        return UInt64(now.tv_sec) &* 1_000_000_000 &+ UInt64(now.tv_nsec)
    }
}
