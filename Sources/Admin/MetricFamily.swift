/// A named metric with its HELP text, type and samples — what `/metrics` renders.
///
/// Counter and gauge families use ``samples``; histogram families use ``histograms``.
public struct MetricFamily: Sendable, Equatable {
    /// The metric name (`[a-zA-Z_:][a-zA-Z0-9_:]*`; other characters are rendered as `_`).
    public var name: String
    /// One line of help text.
    public var help: String
    /// The type announced on the `# TYPE` line.
    public var type: MetricType
    /// The values of a counter or gauge family.
    public var samples: [MetricSample]
    /// The histograms of a histogram family.
    public var histograms: [HistogramSample]

    /// Creates a family.
    public init(name: String, help: String, type: MetricType, samples: [MetricSample] = [],
                histograms: [HistogramSample] = []) {
        self.name = name
        self.help = help
        self.type = type
        self.samples = samples
        self.histograms = histograms
    }

    /// A counter family.
    public static func counter(_ name: String, help: String, _ samples: [MetricSample]) -> MetricFamily {
        MetricFamily(name: name, help: help, type: .counter, samples: samples)
    }

    /// A gauge family.
    public static func gauge(_ name: String, help: String, _ samples: [MetricSample]) -> MetricFamily {
        MetricFamily(name: name, help: help, type: .gauge, samples: samples)
    }

    /// A histogram family.
    public static func histogram(_ name: String, help: String, _ histograms: [HistogramSample]) -> MetricFamily {
        MetricFamily(name: name, help: help, type: .histogram, histograms: histograms)
    }
}
