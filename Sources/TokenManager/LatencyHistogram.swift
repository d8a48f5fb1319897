/// Request durations in fixed buckets (Prometheus histogram semantics: cumulative on export).
/// A plain value owned by one worker: observing takes no lock.
public struct LatencyHistogram: Sendable, Equatable {
    /// Upper bounds in seconds (the `+Inf` bucket is implicit).
    public static let bounds: [Double] = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10]
    /// Per-bucket (not cumulative) counts; the last element counts observations above every bound.
    public private(set) var counts = [UInt64](repeating: 0, count: LatencyHistogram.bounds.count + 1)
    /// Sum of observed seconds.
    public private(set) var sum: Double = 0
    /// Number of observations.
    public private(set) var count: UInt64 = 0

    /// An empty histogram.
    public init() {}

    /// Records one duration.
    public mutating func observe(_ seconds: Double) {
        var index = 0
        while index < Self.bounds.count && seconds > Self.bounds[index] { index += 1 }
        counts[index] += 1
        sum += seconds
        count += 1
    }

    /// Adds another worker's observations.
    public mutating func merge(_ other: LatencyHistogram) {
        for index in counts.indices { counts[index] += other.counts[index] }
        sum += other.sum
        count += other.count
    }

    /// Cumulative counts per bound, as Prometheus exports them (`le` buckets, then `+Inf`).
    public var cumulative: [UInt64] {
        var total: UInt64 = 0
        return counts.map { total += $0; return total }
    }
}
