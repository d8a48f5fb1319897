/// What the exporter has done since start, for metrics and the status page.
public struct ExportCounts: Sendable, Equatable {
    /// Spans the receiver accepted.
    public var exported: UInt64 = 0
    /// Spans dropped because the queue was full (the receiver slow or down).
    public var droppedQueueFull: UInt64 = 0
    /// Spans dropped because their batch failed for good (rejected, or retries exhausted).
    public var droppedExportFailed: UInt64 = 0
    /// Export requests the receiver accepted.
    public var exportsAccepted: UInt64 = 0
    /// Export requests that failed (each retry counts).
    public var exportsFailed: UInt64 = 0
    /// Spans waiting in the queue now.
    public var queued: Int = 0

    /// Every dropped span.
    public var dropped: UInt64 { droppedQueueFull + droppedExportFailed }

    /// Nothing yet.
    public init() {}
}
