/// The OpenTelemetry samplers (`OTEL_TRACES_SAMPLER`): whether a new span is recorded and
/// exported. A child of a remote parent follows the parent's `sampled` flag under the
/// parent-based samplers, so one trace is kept or dropped as a whole.
public enum Sampler: Sendable, Equatable {
    /// Every span.
    case alwaysOn
    /// No span.
    case alwaysOff
    /// A fixed share of traces, decided from the trace id alone (so every process that sees
    /// the trace decides the same way).
    case traceIDRatio(Double)
    /// Follows a parent's `sampled` flag; a root span is decided by `root`.
    indirect case parentBased(root: Sampler)

    /// Whether a span of `traceID` with `parent` (nil: a root) is sampled.
    public func shouldSample(traceID: TraceID, parent: SpanContext?) -> Bool {
        switch self {
        case .alwaysOn: return true
        case .alwaysOff: return false
        case .traceIDRatio(let ratio): return Self.ratioSamples(traceID, ratio: ratio)
        case .parentBased(let root):
            if let parent { return parent.sampled }
            return root.shouldSample(traceID: traceID, parent: nil)
        }
    }

    /// Whether the sampler can record anything at all.
    public var recordsAny: Bool {
        switch self {
        case .alwaysOff: return false
        case .traceIDRatio(let ratio): return ratio > 0
        case .alwaysOn, .parentBased: return true
        }
    }

    /// The OpenTelemetry name and argument (`parentbased_traceidratio`, 0.01).
    public static func named(_ name: String, argument: Double) -> Sampler? {
        switch name {
        case "always_on": return .alwaysOn
        case "always_off": return .alwaysOff
        case "traceidratio": return .traceIDRatio(argument)
        case "parentbased_always_on": return .parentBased(root: .alwaysOn)
        case "parentbased_always_off": return .parentBased(root: .alwaysOff)
        case "parentbased_traceidratio": return .parentBased(root: .traceIDRatio(argument))
        default: return nil
        }
    }

    /// The ratio test on the trace id's low 8 bytes (the part W3C Trace Context Level 2 makes
    /// random): sampled when they fall below `ratio` of their range.
    static func ratioSamples(_ traceID: TraceID, ratio: Double) -> Bool {
        if ratio >= 1 { return true }
        if ratio <= 0 { return false }
        let bound = UInt64(ratio * 9_223_372_036_854_775_808.0)  // ratio × 2^63
        return traceID.low >> 1 < bound
    }
}
