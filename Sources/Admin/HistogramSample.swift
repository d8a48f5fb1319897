/// One histogram of a histogram family (one label combination): rendered as `_bucket` lines
/// with an `le` label (cumulative counts, ending with `le="+Inf"`), then `_sum` and `_count`.
public struct HistogramSample: Sendable, Equatable {
    /// One bucket: observations less than or equal to `upperBound`.
    public struct Bucket: Sendable, Equatable {
        /// The bucket's inclusive upper bound.
        public var upperBound: Double
        /// Observations `<= upperBound` (cumulative, as Prometheus expects).
        public var cumulativeCount: UInt64

        /// Creates a bucket.
        public init(upperBound: Double, cumulativeCount: UInt64) {
            self.upperBound = upperBound
            self.cumulativeCount = cumulativeCount
        }
    }

    /// The labels shared by every line of this histogram (`le` is added per bucket).
    public var labels: [MetricLabel]
    /// Finite buckets in increasing order; the `+Inf` bucket is rendered from ``count``.
    public var buckets: [Bucket]
    /// The sum of all observations.
    public var sum: Double
    /// The number of observations.
    public var count: UInt64

    /// Creates a sample from explicit buckets.
    public init(labels: [MetricLabel] = [], buckets: [Bucket], sum: Double, count: UInt64) {
        self.labels = labels
        self.buckets = buckets
        self.sum = sum
        self.count = count
    }

    /// Creates a sample from an accumulated ``Histogram``.
    public init(labels: [MetricLabel] = [], histogram: Histogram) {
        self.init(labels: labels, buckets: histogram.cumulativeBuckets, sum: histogram.sum, count: histogram.count)
    }
}
