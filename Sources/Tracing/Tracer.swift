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

    /// Whether a child of a remote parent follows the parent's decision (the parent-based samplers).
    private let followsParent: Bool
    /// A root span is sampled when its trace id's low 63 bits are below this (0: never).
    private let rootBound: UInt64
    /// Every root span is sampled.
    private let rootAlways: Bool

    /// A tracer sending what `sampler` keeps to `sink`.
    public init(sampler: Sampler, sink: any SpanSink) {
        self.sampler = sampler
        self.sink = sink
        // The sampler flattened once: a request's decision is two compares, not a walk of an
        // indirect enum.
        var root = sampler
        if case .parentBased(let inner) = sampler {
            followsParent = true
            root = inner
        } else {
            followsParent = false
        }
        switch root {
        case .alwaysOn: (rootAlways, rootBound) = (true, 0)
        case .alwaysOff, .parentBased: (rootAlways, rootBound) = (false, 0)
        case .traceIDRatio(let ratio):
            rootAlways = ratio >= 1
            rootBound = ratio <= 0 || ratio >= 1 ? 0 : UInt64(ratio * 9_223_372_036_854_775_808.0)
        }
    }

    /// The context of a new span: a child of `parent` (same trace) or the root of a new trace,
    /// sampled as the sampler decides (the same decision as ``Sampler/shouldSample(traceID:parent:)``).
    public func newSpan(parent: SpanContext?, ids: inout IDGenerator) -> SpanContext {
        if let parent {
            let sampled = followsParent ? parent.sampled : rootAlways || parent.traceID.low >> 1 < rootBound
            return SpanContext(traceID: parent.traceID, spanID: ids.spanID(), sampled: sampled)
        }
        let traceID = ids.traceID()
        return SpanContext(traceID: traceID, spanID: ids.spanID(), sampled: rootAlways || traceID.low >> 1 < rootBound)
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
