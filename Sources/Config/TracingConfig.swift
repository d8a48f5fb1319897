/// `tracing:` — OpenTelemetry trace export over OTLP/HTTP (protobuf bodies). Off unless an
/// endpoint is set, in the file or through `OTEL_EXPORTER_OTLP_ENDPOINT` /
/// `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`; the standard `OTEL_` variables win over the file.
///
/// File paths are resolved at load (relative ones in the file against its directory) and were
/// readable PEM files then. Header values are secrets: they never appear in problems or in
/// ``SidecarConfig/renderEffective()``.
public struct TracingConfig: Sendable, Equatable {
    /// The OTLP base URL, e.g. `http://collector:4318`; spans go to it + `/v1/traces`
    /// (see ``tracesURL``). Validated http(s) URL without a query, as written.
    public var endpoint: String?
    /// The full URL spans are posted to, used as is; wins over ``endpoint``.
    public var tracesEndpoint: String?
    /// Header fields sent with every export request, in order (names distinct, case-insensitively).
    public var headers: [TracingHeader]
    /// The `service.name` resource attribute (default `token-sidecar`).
    public var serviceName: String
    /// Further resource attributes, in order, keys distinct. Never holds `service.name`: that
    /// is ``serviceName``.
    public var resourceAttributes: [TracingAttribute]
    /// Which spans are recorded (default `parentbased_always_on`, the OpenTelemetry default).
    public var sampler: TraceSamplerKind
    /// The ratio of the ratio samplers, in 0...1 for them (default 1.0); unused by the others.
    public var samplerArg: Double
    /// Turns export off even with an endpoint (`OTEL_SDK_DISABLED=true`); default false.
    public var disabled: Bool
    /// Request body compression (default gzip).
    public var compression: TraceCompression
    /// The longest one export request may take (default 10 s).
    public var timeout: Duration
    /// Most spans held for export; spans beyond it are dropped (default 2048).
    public var maxQueueSize: Int
    /// The longest a span waits before its batch is sent (default 5 s).
    public var scheduleDelay: Duration
    /// The longest one batch export may take, retries included (default 30 s).
    public var exportTimeout: Duration
    /// Most spans per export request, at most ``maxQueueSize`` (default 512).
    public var maxExportBatchSize: Int
    /// CA bundle and client certificate for an https endpoint (unused for http).
    public var tls: TLSSettings
    /// The `OTEL_` variable each value was read from, keyed by its key under `tracing`
    /// (`endpoint`, `batch.maxQueueSize`, `headers.<name>`, `resourceAttributes.<key>`,
    /// `caFile`, ...). A key that is not here was written in the file or is the default.
    public var origins: [String: ValueOrigin]

    /// Default ``serviceName``.
    public static let defaultServiceName = "token-sidecar"
    /// Default ``sampler``.
    public static let defaultSampler = TraceSamplerKind.parentBasedAlwaysOn
    /// Default ``timeout``.
    public static let defaultTimeout: Duration = .seconds(10)
    /// Default ``maxQueueSize``.
    public static let defaultMaxQueueSize = 2048
    /// Default ``scheduleDelay``.
    public static let defaultScheduleDelay: Duration = .seconds(5)
    /// Default ``exportTimeout``.
    public static let defaultExportTimeout: Duration = .seconds(30)
    /// Default ``maxExportBatchSize``.
    public static let defaultMaxExportBatchSize = 512
    /// The path appended to ``endpoint``.
    public static let tracesPath = "v1/traces"

    /// Creates settings; every parameter defaults to the loader's default (tracing off).
    public init(
        endpoint: String? = nil,
        tracesEndpoint: String? = nil,
        headers: [TracingHeader] = [],
        serviceName: String = TracingConfig.defaultServiceName,
        resourceAttributes: [TracingAttribute] = [],
        sampler: TraceSamplerKind = TracingConfig.defaultSampler,
        samplerArg: Double = 1.0,
        disabled: Bool = false,
        compression: TraceCompression = .gzip,
        timeout: Duration = TracingConfig.defaultTimeout,
        maxQueueSize: Int = TracingConfig.defaultMaxQueueSize,
        scheduleDelay: Duration = TracingConfig.defaultScheduleDelay,
        exportTimeout: Duration = TracingConfig.defaultExportTimeout,
        maxExportBatchSize: Int = TracingConfig.defaultMaxExportBatchSize,
        tls: TLSSettings = .default,
        origins: [String: ValueOrigin] = [:]
    ) {
        self.endpoint = endpoint
        self.tracesEndpoint = tracesEndpoint
        self.headers = headers
        self.serviceName = serviceName
        self.resourceAttributes = resourceAttributes
        self.sampler = sampler
        self.samplerArg = samplerArg
        self.disabled = disabled
        self.compression = compression
        self.timeout = timeout
        self.maxQueueSize = maxQueueSize
        self.scheduleDelay = scheduleDelay
        self.exportTimeout = exportTimeout
        self.maxExportBatchSize = maxExportBatchSize
        self.tls = tls
        self.origins = origins
    }

    /// Where spans are posted: ``tracesEndpoint`` as is, else ``endpoint`` joined with
    /// `v1/traces` by one slash; nil when neither is set.
    public var tracesURL: String? {
        tracesEndpoint ?? endpoint.map(Self.tracesURL(base:))
    }

    /// ``tracesURL`` parsed (scheme, host, port, request target), for the exporter.
    public var tracesEndpointURL: EndpointURL? {
        tracesURL.flatMap { try? EndpointURL.parse($0, allowQuery: true).get() }
    }

    /// True when spans are exported: not ``disabled`` and a URL to send them to.
    public var enabled: Bool {
        !disabled && tracesURL != nil
    }

    /// `base` + `/v1/traces`, with exactly one slash between them (the
    /// `OTEL_EXPORTER_OTLP_ENDPOINT` rule): `http://c:4318` and `http://c:4318/` both give
    /// `http://c:4318/v1/traces`, `http://c:4318/otlp` gives `http://c:4318/otlp/v1/traces`.
    public static func tracesURL(base: String) -> String {
        var trimmed = Substring(base)
        while trimmed.hasSuffix("/") { trimmed = trimmed.dropLast() }
        return "\(trimmed)/\(tracesPath)"
    }
}
