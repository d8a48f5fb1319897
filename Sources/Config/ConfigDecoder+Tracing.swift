import Yams

extension ConfigDecoder {
    /// `tracing:` as decoded so far: the settings, the keys found invalid (so no second problem
    /// is reported about them) and the file's nodes by key path (for line numbers).
    struct TracingDraft {
        var config = TracingConfig()
        var invalid: Set<String> = []
        var nodes: [String: Node] = [:]
        /// The TLS keys written in the file (with a value).
        var fileTLSKeys: [String] = []
        /// Whether the file sets `serviceName` (then `service.name` attributes do not count).
        var serviceNameInFile = false

        /// The variable a value was read from, or nil when it came from the file or is the default.
        func variable(_ key: String) -> String? {
            if case .environment(let name) = config.origins[key] { return name }
            return nil
        }

        /// `"VAR: "` when the value of `key` came from a variable (problems name it first), else `""`.
        func prefix(_ key: String) -> String {
            variable(key).map { "\($0): " } ?? ""
        }
    }

    /// `tracing:` — the file's keys, then the OpenTelemetry variables over them (see
    /// `applyTracingEnvironment`), then the checks across keys: the batch fits the queue, the
    /// ratio samplers get a ratio, TLS keys only with an https URL. Without a `tracing:`
    /// section the variables still apply.
    mutating func decodeTracing(_ node: Node?) -> TracingConfig {
        var draft = TracingDraft()
        if let node, !Self.isNull(node),
           let entries = mapping(node, path: "tracing", expected: "a mapping with endpoint, headers, sampler and the other tracing settings") {
            checkKeys(entries, allowed: ConfigKeys.tracing, path: "tracing")
            decodeTracingFile(Self.index(entries), into: &draft)
        }
        applyTracingEnvironment(to: &draft)
        settleServiceName(&draft)
        checkTracing(draft)
        return draft.config
    }

    // MARK: - The file

    private mutating func decodeTracingFile(_ fields: [String: Node], into draft: inout TracingDraft) {
        for (key, value) in fields { draft.nodes[key] = value }
        for (key, keyPath) in [("endpoint", \TracingConfig.endpoint), ("tracesEndpoint", \TracingConfig.tracesEndpoint)] {
            let path = "tracing.\(key)"
            switch string(fields[key], path: path) {
            case .absent: break
            case .invalid: draft.invalid.insert(key)
            case .value(let text):
                if let problem = Self.tracingURLProblem(text, isBase: key == "endpoint") {
                    report(path, problem, at: fields[key])
                    draft.invalid.insert(key)
                } else {
                    draft.config[keyPath: keyPath] = text
                }
            }
        }
        decodeTracingHeaders(fields["headers"], into: &draft)
        decodeResourceAttributes(fields["resourceAttributes"], into: &draft)
        switch string(fields["serviceName"], path: "tracing.serviceName") {
        case .absent: break
        case .invalid: draft.invalid.insert("serviceName")
        case .value(let name):
            if name.isEmpty {
                report("tracing.serviceName", "must not be empty", at: fields["serviceName"])
                draft.invalid.insert("serviceName")
            } else {
                draft.config.serviceName = name
                draft.serviceNameInFile = true
            }
        }
        switch choice(fields["sampler"], path: "tracing.sampler", as: TraceSamplerKind.self) {
        case .absent: break
        case .invalid: draft.invalid.insert("sampler")
        case .value(let sampler): draft.config.sampler = sampler
        }
        switch string(fields["samplerArg"], path: "tracing.samplerArg") {
        case .absent: break
        case .invalid: draft.invalid.insert("samplerArg")
        case .value(let text):
            if let ratio = Self.samplerArgument(text) {
                draft.config.samplerArg = ratio
            } else {
                report("tracing.samplerArg", Self.samplerArgumentProblem(text), at: fields["samplerArg"])
                draft.invalid.insert("samplerArg")
            }
        }
        switch bool(fields["disabled"], path: "tracing.disabled") {
        case .absent: break
        case .invalid: draft.invalid.insert("disabled")
        case .value(let disabled): draft.config.disabled = disabled
        }
        switch choice(fields["compression"], path: "tracing.compression", as: TraceCompression.self) {
        case .absent: break
        case .invalid: draft.invalid.insert("compression")
        case .value(let compression): draft.config.compression = compression
        }
        if let timeout = positiveDuration(fields["timeout"], path: "tracing.timeout", draft: &draft) {
            draft.config.timeout = timeout
        }
        decodeTracingBatch(fields["batch"], into: &draft)
        let (tls, given) = decodeTLSSettings(fields, path: "tracing")
        if let tls { draft.config.tls = tls } else { draft.invalid.insert("tls") }
        draft.fileTLSKeys = given
    }

    /// `tracing.batch:` — queue and batch sizes, delay and export timeout, each greater than 0.
    private mutating func decodeTracingBatch(_ node: Node?, into draft: inout TracingDraft) {
        guard let node, !Self.isNull(node),
              let entries = mapping(node, path: "tracing.batch",
                                    expected: "a mapping with maxQueueSize, scheduleDelay, exportTimeout and maxExportBatchSize")
        else { return }
        checkKeys(entries, allowed: ConfigKeys.tracingBatch, path: "tracing.batch")
        let fields = Self.index(entries)
        for (key, value) in fields { draft.nodes["batch.\(key)"] = value }
        let sizes: [(String, WritableKeyPath<TracingConfig, Int>)] = [
            ("maxQueueSize", \.maxQueueSize), ("maxExportBatchSize", \.maxExportBatchSize),
        ]
        for (key, keyPath) in sizes where fields[key] != nil {
            if let size = boundedInt(fields[key], path: "tracing.batch.\(key)", range: ConfigKeys.tracingBatchSize) {
                draft.config[keyPath: keyPath] = size
            } else {
                draft.invalid.insert("batch.\(key)")
            }
        }
        let durations: [(String, WritableKeyPath<TracingConfig, Duration>)] = [
            ("scheduleDelay", \.scheduleDelay), ("exportTimeout", \.exportTimeout),
        ]
        for (key, keyPath) in durations {
            if let value = positiveDuration(fields[key], path: "tracing.batch.\(key)", draft: &draft) {
                draft.config[keyPath: keyPath] = value
            }
        }
    }

    /// `tracing.headers:` — header names to values. Values are never put in messages.
    private mutating func decodeTracingHeaders(_ node: Node?, into draft: inout TracingDraft) {
        guard let node, !Self.isNull(node),
              let entries = mapping(node, path: "tracing.headers", expected: "a mapping of header names to values")
        else { return }
        for entry in entries {
            let path = Self.join("tracing.headers", entry.key)
            guard case .value(let raw) = string(entry.value, path: path, nullIsAbsent: false) else {
                draft.invalid.insert("headers")
                continue
            }
            let value = Self.trimmedFieldValue(raw)
            let problem = Self.tracingHeaderNameProblem(entry.key) ?? Self.tracingHeaderValueProblem(value)
                ?? draft.config.headers.first { $0.name.lowercased() == entry.key.lowercased() }
                    .map { "the same header as \($0.name) (header names are case-insensitive)" }
            if let problem {
                report(path, problem, line: entry.line)
                draft.invalid.insert("headers")
            } else {
                draft.config.headers.append(TracingHeader(name: entry.key, value: value))
            }
        }
    }

    /// `tracing.resourceAttributes:` — attribute keys to string values.
    private mutating func decodeResourceAttributes(_ node: Node?, into draft: inout TracingDraft) {
        guard let node, !Self.isNull(node),
              let entries = mapping(node, path: "tracing.resourceAttributes",
                                    expected: "a mapping of attribute keys to values, e.g. {deployment.environment: prod}")
        else { return }
        for entry in entries {
            let path = Self.join("tracing.resourceAttributes", entry.key)
            guard case .value(let value) = string(entry.value, path: path, nullIsAbsent: false) else { continue }
            if entry.key.isEmpty {
                report("tracing.resourceAttributes", "attribute keys must not be empty", line: entry.line)
            } else {
                draft.config.resourceAttributes.append(TracingAttribute(key: entry.key, value: value))
            }
        }
    }

    /// A duration greater than 0, or nil (a problem reported, `key` marked invalid, when it is not).
    private mutating func positiveDuration(_ node: Node?, path: String, draft: inout TracingDraft) -> Duration? {
        let key = String(path.dropFirst("tracing.".count))
        switch duration(node, path: path) {
        case .absent: return nil
        case .invalid:
            draft.invalid.insert(key)
            return nil
        case .value(let value):
            if value > .zero { return value }
            report(path, "must be greater than 0", at: node)
            draft.invalid.insert(key)
            return nil
        }
    }

    // MARK: - After the variables

    /// The service name is `serviceName` (from `OTEL_SERVICE_NAME` or the file), else a
    /// `service.name` resource attribute (from `OTEL_RESOURCE_ATTRIBUTES` or the file), else the
    /// default; `service.name` never stays among the attributes.
    private func settleServiceName(_ draft: inout TracingDraft) {
        let attributeKey = "resourceAttributes.service.name"
        if let attribute = draft.config.resourceAttributes.first(where: { $0.key == "service.name" }),
           !attribute.value.isEmpty, draft.variable("serviceName") == nil, !draft.serviceNameInFile, !draft.invalid.contains("serviceName") {
            draft.config.serviceName = attribute.value
            draft.config.origins["serviceName"] = draft.config.origins[attributeKey]
        }
        draft.config.resourceAttributes.removeAll { $0.key == "service.name" }
        draft.config.origins[attributeKey] = nil
    }

    /// Checks across keys, each only when the values involved are valid themselves.
    private mutating func checkTracing(_ draft: TracingDraft) {
        let config = draft.config
        if !draft.invalid.contains("batch.maxQueueSize"), !draft.invalid.contains("batch.maxExportBatchSize"),
           config.maxExportBatchSize > config.maxQueueSize {
            let queue = draft.variable("batch.maxQueueSize").map { "\($0) = \(config.maxQueueSize)" }
                ?? "tracing.batch.maxQueueSize \(config.maxQueueSize)"
            report("tracing.batch.maxExportBatchSize",
                   "\(draft.prefix("batch.maxExportBatchSize"))\(config.maxExportBatchSize) is more than \(queue): a batch must fit in the queue",
                   at: draft.nodes["batch.maxExportBatchSize"])
        }
        if config.sampler.usesRatio, !draft.invalid.contains("sampler"), !draft.invalid.contains("samplerArg"),
           !(0...1).contains(config.samplerArg) {
            let sampler = draft.variable("sampler").map { "\($0) = \(config.sampler.rawValue)" } ?? config.sampler.rawValue
            report("tracing.samplerArg",
                   "\(draft.prefix("samplerArg"))must be a ratio between 0 and 1 for sampler \(sampler) (got \(config.samplerArg))",
                   at: draft.nodes["samplerArg"])
        }
        checkTracingTLS(draft)
    }

    /// TLS keys only with an https URL; a client certificate and its key together.
    private mutating func checkTracingTLS(_ draft: TracingDraft) {
        let tlsKeys = ConfigKeys.tls.filter { draft.fileTLSKeys.contains($0) || draft.variable($0) != nil }
        if draft.invalid.isDisjoint(with: ["endpoint", "tracesEndpoint"]), let url = draft.config.tracesEndpointURL, !url.isTLS {
            for key in tlsKeys {
                report("tracing.\(key)", "\(draft.prefix(key))TLS settings need an https:// URL (spans go to \(draft.config.tracesURL ?? ""))",
                       at: draft.nodes[key])
            }
            return
        }
        guard !draft.invalid.contains("tls") else { return }
        let tls = draft.config.tls
        for (key, other, noun) in [("clientCert", "clientKey", "its private key"), ("clientKey", "clientCert", "its certificate")] {
            guard let variable = draft.variable(key), (key == "clientCert" ? tls.clientKey : tls.clientCert) == nil else { continue }
            let otherVariable = key == "clientCert" ? "OTEL_EXPORTER_OTLP_CLIENT_KEY" : "OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE"
            report("tracing.\(key)", "\(variable): a client certificate needs \(noun) as well (\(otherVariable) or tracing.\(other))", line: nil)
        }
    }

    // MARK: - Shared by the file and the variables

    /// Why `text` is not a usable endpoint (an http(s) URL with a host; the base `endpoint` has no
    /// query, since `/v1/traces` is appended to its path), or nil. The URL itself is not repeated.
    static func tracingURLProblem(_ text: String, isBase: Bool) -> String? {
        switch EndpointURL.parse(text, allowQuery: !isBase) {
        case .success: return nil
        case .failure(let error):
            let hint = isBase && error.message == "URL must not have a query"
                ? " (v1/traces is appended to the endpoint's path; give the full URL as tracesEndpoint instead)" : ""
            return "invalid URL: \(error.message)\(hint)"
        }
    }

    /// Header fields the exporter writes itself.
    static let exporterFieldNames: Set<String> = [
        "host", "content-type", "content-length", "content-encoding", "transfer-encoding", "connection", "keep-alive",
        "te", "trailer", "upgrade", "expect", "proxy-connection",
    ]

    /// Why `name` cannot be an export request header (not an RFC 9110 token, or a field the
    /// exporter writes), or nil.
    static func tracingHeaderNameProblem(_ name: String) -> String? {
        guard FieldNameSyntax.isToken(name) else {
            return "is not an HTTP header name (letters, digits and !#$%&'*+-.^_`|~, e.g. X-Api-Key)"
        }
        if exporterFieldNames.contains(name.lowercased()) { return "\(name) is a header the exporter writes itself" }
        return nil
    }

    /// Why `value` cannot be a header value (a control character would end the header line), or nil.
    static func tracingHeaderValueProblem(_ value: String) -> String? {
        let control = value.unicodeScalars.contains { ($0.value < 0x20 && $0 != "\t") || $0.value == 0x7F }
        return control ? "the value must not contain CR, LF, NUL or other control characters" : nil
    }

    /// Spaces and tabs around a header value are not part of it.
    static func trimmedFieldValue(_ text: String) -> String {
        var value = Substring(text)
        while let first = value.first, first == " " || first == "\t" { value = value.dropFirst() }
        while let last = value.last, last == " " || last == "\t" { value = value.dropLast() }
        return String(value)
    }

    /// A finite decimal number (`0.25`, `1`, `1e-3`), or nil.
    static func samplerArgument(_ text: String) -> Double? {
        guard !text.isEmpty, text.allSatisfy({ "0123456789.eE+-".contains($0) }), let value = Double(text), value.isFinite else {
            return nil
        }
        return value
    }

    /// The message for a `samplerArg` that is not a number.
    static func samplerArgumentProblem(_ text: String) -> String {
        "expected a number such as 0.25 (the share of traces the ratio samplers keep), got '\(text)'"
    }
}
