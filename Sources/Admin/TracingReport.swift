import JSON

/// Trace export on the status page: whether it is on, where spans go (never a header value),
/// and what became of the spans.
public struct TracingReport: Sendable, Equatable {
    /// Whether spans are recorded and exported.
    public var enabled: Bool
    /// The traces URL, when on.
    public var endpoint: String?
    /// The sampler's OpenTelemetry name (`parentbased_traceidratio`), with its argument when it has one.
    public var sampler: String?
    /// Spans the receiver accepted.
    public var exported: UInt64
    /// Spans dropped: the queue was full.
    public var droppedQueueFull: UInt64
    /// Spans dropped: their batch failed for good.
    public var droppedExportFailed: UInt64
    /// Spans waiting to be sent.
    public var queued: Int

    /// A report.
    public init(enabled: Bool, endpoint: String? = nil, sampler: String? = nil, exported: UInt64 = 0, droppedQueueFull: UInt64 = 0,
                droppedExportFailed: UInt64 = 0, queued: Int = 0) {
        self.enabled = enabled
        self.endpoint = endpoint
        self.sampler = sampler
        self.exported = exported
        self.droppedQueueFull = droppedQueueFull
        self.droppedExportFailed = droppedExportFailed
        self.queued = queued
    }

    /// Tracing is off.
    public static let off = TracingReport(enabled: false)

    /// The status JSON's `tracing` member.
    public var json: JSONValue {
        .object([
            ("enabled", .bool(enabled)),
            ("endpoint", .string(endpoint)),
            ("sampler", .string(sampler)),
            ("spansExported", .int(Int(exported))),
            ("spansDropped", .int(Int(droppedQueueFull + droppedExportFailed))),
            ("spansDroppedQueueFull", .int(Int(droppedQueueFull))),
            ("spansDroppedExportFailed", .int(Int(droppedExportFailed))),
            ("spansQueued", .int(queued)),
        ])
    }
}
