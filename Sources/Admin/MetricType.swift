/// The Prometheus metric types this exporter produces.
public enum MetricType: String, Sendable, Equatable {
    /// A monotonically increasing count (name it `..._total`).
    case counter
    /// A value that goes up and down.
    case gauge
    /// Bucketed observations with their sum and count.
    case histogram
}
