import Dispatch
import EventLoop
import HTTP1
import Logging
import TokenManager
import Tracing

/// The OpenTelemetry batch span processor with an OTLP/HTTP protobuf exporter, on a loop of
/// its own: request threads hand finished spans to a bounded queue (a lock and an append;
/// a full queue drops and counts), and the loop sends batches — every `scheduleDelay`, or as
/// soon as a batch's worth is queued — gzip-compressed, retrying as ``ExportSchedule`` says.
///
/// `@unchecked Sendable`: the queue and the counts are behind locks; everything else (the
/// schedule, the held batch, the timer, the transport) is touched only on ``loop``'s thread.
public final class BatchSpanExporter: SpanSink, @unchecked Sendable {
    /// Where and how to export.
    public struct Settings: Sendable {
        /// The traces URL (`…/v1/traces`).
        public var endpoint: TokenEndpoint
        /// Extra request header fields (`OTEL_EXPORTER_OTLP_HEADERS`); their values are secrets.
        public var headers: [(name: String, value: String)]
        /// Whether bodies are gzip-compressed.
        public var gzip: Bool
        /// The limit for one export request.
        public var timeout: Duration
        /// Most spans waiting (`OTEL_BSP_MAX_QUEUE_SIZE`).
        public var maxQueueSize: Int
        /// Most spans per export (`OTEL_BSP_MAX_EXPORT_BATCH_SIZE`).
        public var maxExportBatchSize: Int
        /// Longest wait before queued spans are sent (`OTEL_BSP_SCHEDULE_DELAY`).
        public var scheduleDelay: Duration

        /// Settings; the defaults are the OpenTelemetry SDKs'.
        public init(endpoint: TokenEndpoint, headers: [(name: String, value: String)] = [], gzip: Bool = true,
                    timeout: Duration = .seconds(10), maxQueueSize: Int = 2048, maxExportBatchSize: Int = 512,
                    scheduleDelay: Duration = .seconds(5)) {
            self.endpoint = endpoint
            self.headers = headers
            self.gzip = gzip
            self.timeout = timeout
            self.maxQueueSize = maxQueueSize
            self.maxExportBatchSize = maxExportBatchSize
            self.scheduleDelay = scheduleDelay
        }
    }

    /// The exporter's loop: every export runs on its thread.
    public let loop: EventLoop
    /// Where and how it exports.
    public let settings: Settings
    private let encoder: OTLPTraceEncoder
    private let logger: Logger

    // Any thread, behind locks.
    private let queue = Locked(PendingSpans())
    private let counts = Locked(ExportCounts())

    // Confined to the loop.
    private let transport: HTTPTokenTransport
    private var schedule: ExportSchedule
    private var held: [SpanRecord] = []
    private var timer: Timer?
    private var failing = false
    private var stopped = false
    /// While shutting down: called once everything queued has been sent (or dropped).
    private var drained: (() -> Void)?
    private var exporting = false

    /// An exporter sending to `settings.endpoint` through `connector` (plain or verified TLS).
    public init(settings: Settings, encoder: OTLPTraceEncoder, loop: EventLoop, logger: Logger,
                connector: @escaping TokenConnector = HTTPTokenTransport.plainConnector) {
        self.settings = settings
        self.encoder = encoder
        self.loop = loop
        self.logger = logger
        self.transport = HTTPTokenTransport(loop: loop, timeout: settings.timeout, maxBodyBytes: 64 << 10, connector: connector)
        self.schedule = ExportSchedule(scheduleDelay: settings.scheduleDelay)
    }

    /// Starts the schedule (any thread).
    public func start() {
        loop.execute { [self] in
            timer = Timer(on: loop) { [weak self] in self?.timerFired() }
            apply(.wait(settings.scheduleDelay))
        }
    }

    /// Sends what is queued, one attempt per batch and no retries, then stops: waits (blocking
    /// the caller, never the exporter's loop) at most `timeout`. A process that drains on
    /// SIGTERM calls it last, so its final requests' spans are not lost with it.
    public func shutdown(timeout: Duration) {
        let done = DispatchSemaphore(value: 0)
        loop.execute { [self] in
            guard !stopped else {
                done.signal()
                return
            }
            timer?.cancel()
            drained = { done.signal() }
            if !exporting { drainStep() }
        }
        let (seconds, attoseconds) = timeout.components
        _ = done.wait(timeout: .now() + .nanoseconds(Int(seconds * 1_000_000_000 + attoseconds / 1_000_000_000)))
        stop()
    }

    /// Stops exporting (any thread); queued spans are dropped with the process.
    public func stop() {
        loop.execute { [self] in
            stopped = true
            timer?.cancel()
            timer = nil
        }
    }

    /// Queues `span` (any thread, never blocks on I/O).
    public func submit(_ span: SpanRecord) {
        let limit = settings.maxQueueSize
        let batch = settings.maxExportBatchSize
        let ready: Bool = queue.withLock { pending in
            guard pending.spans.count < limit else {
                pending.dropped += 1
                return false
            }
            pending.spans.append(span)
            guard pending.spans.count >= batch, !pending.signalled else { return false }
            pending.signalled = true
            return true
        }
        if ready { loop.execute { [self] in batchReady() } }
    }

    /// What has been exported and dropped so far (any thread).
    public var snapshot: ExportCounts {
        let (queued, dropped) = queue.withLock { ($0.spans.count, $0.dropped) }
        var result = counts.withLock { $0 }
        result.queued = queued
        result.droppedQueueFull = dropped
        return result
    }

    // MARK: - On the loop

    private func batchReady() {
        queue.withLock { $0.signalled = false }
        guard !stopped, drained == nil, let action = schedule.batchReady() else { return }
        apply(action)
    }

    private func timerFired() {
        guard !stopped, drained == nil else { return }
        apply(schedule.timerFired(queued: queue.withLock { $0.spans.count }))
    }

    private func apply(_ action: ExportSchedule.Action) {
        switch action {
        case .exportNew:
            held = takeBatch()
            send()
        case .exportHeld:
            send()
        case .dropHeld:
            let count = UInt64(held.count)
            counts.withLock { $0.droppedExportFailed += count }
            held = []
        case .releaseHeld:
            let count = UInt64(held.count)
            counts.withLock { $0.exported += count }
            held = []
        case .wait(let delay):
            timer?.schedule(after: delay)
        }
    }

    /// The oldest queued spans, a batch's worth at most.
    private func takeBatch() -> [SpanRecord] {
        let limit = settings.maxExportBatchSize
        return queue.withLock { pending in
            let count = min(limit, pending.spans.count)
            let taken = Array(pending.spans.prefix(count))
            pending.spans.removeFirst(count)
            return taken
        }
    }

    /// Shutting down: the held batch, then the queue's, until nothing is left.
    private func drainStep() {
        if held.isEmpty { held = takeBatch() }
        guard !held.isEmpty else {
            let done = drained
            drained = nil
            done?()
            return
        }
        send()
    }

    private func send() {
        exporting = true
        let body = encoder.encode(held)
        let compressed = settings.gzip ? Gzip.compress(body) : nil
        let wire = compressed ?? body
        var fields = HTTPFields()
        fields.append("Host", settings.endpoint.authority)
        fields.append("User-Agent", "token-sidecar")
        fields.append("Content-Type", "application/x-protobuf")
        if compressed != nil { fields.append("Content-Encoding", "gzip") }
        fields.append("Content-Length", String(wire.count))
        for header in settings.headers { fields.append(header.name, header.value) }
        fields.append("Connection", "close")
        let request = TokenEndpointRequest(endpoint: settings.endpoint, fields: fields, body: wire)
        transport.send(request) { [weak self] result in self?.finished(result) }
    }

    private func finished(_ result: Result<TokenHTTPResponse, TokenTransportError>) {
        exporting = false
        let outcome: ExportSchedule.Outcome
        switch result {
        case .success(let response) where (200..<300).contains(response.status):
            outcome = .accepted
        case .success(let response) where [429, 502, 503, 504].contains(response.status):
            let retryAfter = response.fields.first("retry-after").flatMap {
                RetryAfter.parse($0, wallClock: Double(Tracer.nowNanos()) / 1e9)
            }
            outcome = .retryable(retryAfter: retryAfter)
        case .success:
            outcome = .rejected
        case .failure:
            outcome = .retryable(retryAfter: nil)
        }
        counts.withLock {
            if outcome == .accepted { $0.exportsAccepted += 1 } else { $0.exportsFailed += 1 }
        }
        report(outcome, result)
        guard !stopped else { return }
        if drained != nil {
            // Shutting down: no retry; what failed is dropped and counted.
            apply(outcome == .accepted ? .releaseHeld : .dropHeld)
            drainStep()
            return
        }
        let queued = queue.withLock { $0.spans.count }
        for action in schedule.exportFinished(outcome, queued: queued, batchSize: settings.maxExportBatchSize) { apply(action) }
    }

    /// One warning when exports start failing and one line when they work again, not one per
    /// batch. Never a header value: they may be API keys.
    private func report(_ outcome: ExportSchedule.Outcome, _ result: Result<TokenHTTPResponse, TokenTransportError>) {
        if outcome == .accepted {
            if failing { logger.info("trace export works again", metadata: ["endpoint": .string(settings.endpoint.description)]) }
            failing = false
            return
        }
        guard !failing else { return }
        failing = true
        let problem: String
        switch result {
        case .success(let response): problem = "HTTP \(response.status)"
        case .failure(let error): problem = "\(error)"
        }
        logger.warning("trace export failed; spans are retried, then dropped and counted", metadata: [
            "endpoint": .string(settings.endpoint.description), "error": .string(problem),
        ])
    }
}

/// Spans handed over by request threads, waiting for the exporter's loop.
struct PendingSpans {
    var spans: [SpanRecord] = []
    /// Spans refused because the queue was full.
    var dropped: UInt64 = 0
    /// Whether the loop was already told that a batch is ready.
    var signalled = false
}
