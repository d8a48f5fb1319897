import Config
import Credentials
import EventLoop
import Logging
import TokenManager
import TraceExport
import Tracing

/// Trace export as configured (`tracing:` and the `OTEL_*` variables): the tracer the proxy's
/// workers and the token loop record spans with, and the OTLP/HTTP exporter on a loop of its
/// own. Nil where tracing is off: then nothing is recorded and trace fields pass untouched.
final class TracingSetup {
    /// What was configured.
    let config: TracingConfig
    /// Records spans; hand it to the proxy and the credentials.
    let tracer: Tracer
    /// Sends the spans.
    let exporter: BatchSpanExporter
    private let thread: LoopThread

    /// The setup for `config`, or nil when tracing is off. Throws ``StartError`` when the
    /// exporter's URL or TLS files cannot be used.
    init?(config: TracingConfig, logger: Logger) throws {
        guard config.enabled, let url = config.tracesURL else { return nil }
        self.config = config
        let endpoint: TokenEndpoint
        do {
            endpoint = try TokenEndpoint(url: url)
        } catch {
            throw StartError.configuration("tracing: the traces endpoint \(url) cannot be used: \(error)")
        }
        let connector: TokenConnector
        do {
            connector = try CredentialFactory.connector(for: config.tls, name: "tracing", logger: logger)
        } catch {
            throw StartError.configuration("tracing: \(error)")
        }
        thread = try LoopThread { _ in }
        let settings = BatchSpanExporter.Settings(
            endpoint: endpoint, headers: config.headers.map { (name: $0.name, value: $0.value) },
            gzip: config.compression == .gzip, timeout: min(config.timeout, config.exportTimeout), maxQueueSize: config.maxQueueSize,
            maxExportBatchSize: min(config.maxExportBatchSize, config.maxQueueSize), scheduleDelay: config.scheduleDelay)
        exporter = BatchSpanExporter(settings: settings, encoder: OTLPTraceEncoder(resource: Self.resource(config)),
                                     loop: thread.loop, logger: logger, connector: connector)
        let sampler = Sampler.named(config.sampler.rawValue, argument: config.samplerArg) ?? .parentBased(root: .alwaysOn)
        tracer = Tracer(sampler: sampler, sink: exporter)
    }

    /// Starts the exporter's loop.
    func start() throws {
        try thread.start()
        exporter.start()
    }

    /// Sends what is still queued (at most `flushTimeout`), then stops exporting and the loop.
    func stop() {
        exporter.shutdown(timeout: Self.flushTimeout)
        thread.stopAndJoin()
    }

    /// How long the last spans may take to leave at shutdown (after the drain of requests).
    static let flushTimeout: Duration = .seconds(2)

    /// `service.name` first, then the configured resource attributes, then the
    /// `telemetry.sdk.*` attributes the OpenTelemetry resource conventions ask for.
    static func resource(_ config: TracingConfig) -> [SpanAttribute] {
        var attributes = [SpanAttribute("service.name", .string(config.serviceName))]
        for attribute in config.resourceAttributes where attribute.key != "service.name" {
            attributes.append(SpanAttribute(attribute.key, .string(attribute.value)))
        }
        attributes.append(SpanAttribute("telemetry.sdk.name", .string("token-sidecar")))
        attributes.append(SpanAttribute("telemetry.sdk.language", .string("swift")))
        return attributes
    }
}
