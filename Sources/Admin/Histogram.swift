/// A lock-free histogram accumulator: a plain value that one thread owns (e.g. one per worker
/// loop), observes into without synchronisation, and hands over by copy to be merged and
/// rendered.
public struct Histogram: Sendable, Equatable {
    /// Request-latency buckets in seconds, 0.5 ms to 10 s.
    public static let defaultLatencyBounds: [Double] =
        [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10]

    /// Finite, strictly increasing upper bounds.
    public let upperBounds: [Double]
    /// Per-bucket (not cumulative) counts; the last slot counts observations above every bound.
    private var bucketCounts: [UInt64]
    /// The sum of all observations.
    public private(set) var sum: Double = 0
    /// The number of observations.
    public private(set) var count: UInt64 = 0

    /// Creates an empty histogram.
    /// - Precondition: `upperBounds` is strictly increasing and finite.
    public init(upperBounds: [Double] = Histogram.defaultLatencyBounds) {
        precondition(upperBounds.allSatisfy(\.isFinite), "histogram bounds must be finite")
        precondition(zip(upperBounds, upperBounds.dropFirst()).allSatisfy { $0 < $1 },
                     "histogram bounds must be strictly increasing")
        self.upperBounds = upperBounds
        self.bucketCounts = Array(repeating: 0, count: upperBounds.count + 1)
    }

    /// Records one observation (NaN is ignored: it would poison the sum).
    public mutating func observe(_ value: Double) {
        guard !value.isNaN else { return }
        // Binary search for the first bound >= value (`le` is inclusive).
        var low = 0, high = upperBounds.count
        while low < high {
            let mid = (low + high) / 2
            if upperBounds[mid] < value { low = mid + 1 } else { high = mid }
        }
        bucketCounts[low] &+= 1
        sum += value
        count &+= 1
    }

    /// Records a duration in seconds.
    public mutating func observe(_ duration: Duration) {
        let (seconds, attoseconds) = duration.components
        observe(Double(seconds) + Double(attoseconds) / 1e18)
    }

    /// Adds `other`'s observations to this one.
    /// - Precondition: both have the same bounds.
    public mutating func merge(_ other: Histogram) {
        precondition(other.upperBounds == upperBounds, "cannot merge histograms with different bounds")
        for index in bucketCounts.indices { bucketCounts[index] &+= other.bucketCounts[index] }
        sum += other.sum
        count &+= other.count
    }

    /// This histogram plus `other`.
    public func merged(with other: Histogram) -> Histogram {
        var copy = self
        copy.merge(other)
        return copy
    }

    /// The finite buckets with cumulative counts, as Prometheus renders them (`+Inf` is ``count``).
    public var cumulativeBuckets: [HistogramSample.Bucket] {
        var running: UInt64 = 0
        return upperBounds.indices.map { index in
            running &+= bucketCounts[index]
            return HistogramSample.Bucket(upperBound: upperBounds[index], cumulativeCount: running)
        }
    }
}
