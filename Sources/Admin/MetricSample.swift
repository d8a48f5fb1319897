/// One value of a counter or gauge family, with its labels.
public struct MetricSample: Sendable, Equatable {
    /// The sample's labels, in the order they are rendered.
    public var labels: [MetricLabel]
    /// The value.
    public var value: Double

    /// Creates a sample.
    public init(labels: [MetricLabel] = [], value: Double) {
        self.labels = labels
        self.value = value
    }

    /// Creates a sample from an integer count.
    public init(labels: [MetricLabel] = [], value: Int) {
        self.init(labels: labels, value: Double(value))
    }
}
