/// Which OpenTelemetry sampler decides whether a span is recorded (`tracing.sampler`,
/// `OTEL_TRACES_SAMPLER`); the raw values are the OpenTelemetry names.
public enum TraceSamplerKind: String, Sendable, Hashable, CaseIterable {
    /// Every span.
    case alwaysOn = "always_on"
    /// No span.
    case alwaysOff = "always_off"
    /// A share of traces (``TracingConfig/samplerArg``), decided from the trace id.
    case traceIDRatio = "traceidratio"
    /// Follows the parent's sampled flag; root spans are all recorded (the OpenTelemetry default).
    case parentBasedAlwaysOn = "parentbased_always_on"
    /// Follows the parent's sampled flag; root spans are never recorded.
    case parentBasedAlwaysOff = "parentbased_always_off"
    /// Follows the parent's sampled flag; a share of root spans (``TracingConfig/samplerArg``) is recorded.
    case parentBasedTraceIDRatio = "parentbased_traceidratio"

    /// True for the samplers that read ``TracingConfig/samplerArg`` (a ratio in 0...1).
    public var usesRatio: Bool {
        self == .traceIDRatio || self == .parentBasedTraceIDRatio
    }
}
