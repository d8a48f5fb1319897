import Foundation

extension ConfigDecoder {
    /// The OpenTelemetry SDK variables over the `tracing:` keys of the file (a variable wins over
    /// the key; a `_TRACES_` variable wins over its generic one, per header for the header
    /// lists). An empty variable counts as unset, as the OpenTelemetry specification says. A
    /// bad value is a problem at the key it sets whose message starts with the variable's name;
    /// values of the `_HEADERS` variables never appear in messages.
    mutating func applyTracingEnvironment(to draft: inout TracingDraft) {
        defer { checkTracingProtocol(draft) }
        for (key, keyPath, name) in [
            ("endpoint", \TracingConfig.endpoint, "OTEL_EXPORTER_OTLP_ENDPOINT"),
            ("tracesEndpoint", \TracingConfig.tracesEndpoint, "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"),
        ] {
            guard let variable = otelVariable(name) else { continue }
            if let problem = Self.tracingURLProblem(variable.value, isBase: key == "endpoint") {
                reportVariable(key, variable.name, problem, draft: &draft)
            } else {
                set(key, variable.name, in: &draft) { $0[keyPath: keyPath] = variable.value }
            }
        }
        for name in ["OTEL_EXPORTER_OTLP_HEADERS", "OTEL_EXPORTER_OTLP_TRACES_HEADERS"] {
            if let variable = otelVariable(name) { applyHeaderVariable(variable, to: &draft) }
        }
        if let variable = otelVariable("OTEL_SERVICE_NAME") {
            set("serviceName", variable.name, in: &draft) { $0.serviceName = variable.value }
        }
        if let variable = otelVariable("OTEL_RESOURCE_ATTRIBUTES") { applyAttributeVariable(variable, to: &draft) }
        if let variable = otelVariable("OTEL_TRACES_SAMPLER") {
            if let sampler = TraceSamplerKind(rawValue: variable.value) {
                set("sampler", variable.name, in: &draft) { $0.sampler = sampler }
            } else {
                let names = TraceSamplerKind.allCases.map(\.rawValue)
                let hint = Suggestions.closest(to: variable.value, in: names).map { " (did you mean '\($0)'?)" } ?? ""
                reportVariable("sampler", variable.name,
                               "unknown sampler '\(variable.value)'; expected one of \(names.joined(separator: ", "))\(hint)", draft: &draft)
            }
        }
        if let variable = otelVariable("OTEL_TRACES_SAMPLER_ARG") {
            if let ratio = Self.samplerArgument(variable.value) {
                set("samplerArg", variable.name, in: &draft) { $0.samplerArg = ratio }
            } else {
                reportVariable("samplerArg", variable.name, Self.samplerArgumentProblem(variable.value), draft: &draft)
            }
        }
        if let variable = otelVariable("OTEL_SDK_DISABLED") {
            set("disabled", variable.name, in: &draft) { $0.disabled = variable.value.lowercased() == "true" }
        }
        if let variable = otelVariable("OTEL_EXPORTER_OTLP_TRACES_COMPRESSION", "OTEL_EXPORTER_OTLP_COMPRESSION") {
            if let compression = TraceCompression(rawValue: variable.value) {
                set("compression", variable.name, in: &draft) { $0.compression = compression }
            } else {
                let names = TraceCompression.allCases.map(\.rawValue).joined(separator: ", ")
                reportVariable("compression", variable.name, "'\(variable.value)' is not one of \(names)", draft: &draft)
            }
        }
        applyDurationVariable(("timeout", \.timeout), names: "OTEL_EXPORTER_OTLP_TRACES_TIMEOUT", "OTEL_EXPORTER_OTLP_TIMEOUT", to: &draft)
        applyDurationVariable(("batch.scheduleDelay", \.scheduleDelay), names: "OTEL_BSP_SCHEDULE_DELAY", to: &draft)
        applyDurationVariable(("batch.exportTimeout", \.exportTimeout), names: "OTEL_BSP_EXPORT_TIMEOUT", to: &draft)
        applySizeVariable(("batch.maxQueueSize", \.maxQueueSize), name: "OTEL_BSP_MAX_QUEUE_SIZE", to: &draft)
        applySizeVariable(("batch.maxExportBatchSize", \.maxExportBatchSize), name: "OTEL_BSP_MAX_EXPORT_BATCH_SIZE", to: &draft)
        let files: [(key: String, kind: PEMFile.Kind, keyPath: WritableKeyPath<TLSSettings, String?>, names: [String])] = [
            ("caFile", .caBundle, \.caFile, ["OTEL_EXPORTER_OTLP_TRACES_CERTIFICATE", "OTEL_EXPORTER_OTLP_CERTIFICATE"]),
            ("clientCert", .certificate, \.clientCert,
             ["OTEL_EXPORTER_OTLP_TRACES_CLIENT_CERTIFICATE", "OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE"]),
            ("clientKey", .privateKey, \.clientKey, ["OTEL_EXPORTER_OTLP_TRACES_CLIENT_KEY", "OTEL_EXPORTER_OTLP_CLIENT_KEY"]),
        ]
        for file in files {
            guard let variable = otelVariable(file.names) else { continue }
            if let problem = PEMFile.check(variable.value, kind: file.kind) {
                reportVariable(file.key, variable.name, problem.message, draft: &draft)
            } else {
                set(file.key, variable.name, in: &draft) { $0.tls[keyPath: file.keyPath] = variable.value }
            }
        }
    }

    // MARK: - Lists

    /// `OTEL_EXPORTER_OTLP_HEADERS` / `_TRACES_HEADERS`: each header replaces the one of the same
    /// name (case-insensitively) or is appended. Nothing of the value is ever reported.
    private mutating func applyHeaderVariable(_ variable: (name: String, value: String), to draft: inout TracingDraft) {
        let pairs: [OTelKeyValueList.Pair]
        switch OTelKeyValueList.parse(variable.value, decodeKeys: false) {
        case .success(let parsed): pairs = parsed
        case .failure(let problem):
            reportVariable("headers", variable.name, "\(problem.message); expected name=value pairs such as api-key=secret,tenant=a", draft: &draft)
            return
        }
        for (index, pair) in pairs.enumerated() {
            let value = Self.trimmedFieldValue(pair.value)
            if Self.tracingHeaderNameProblem(pair.key) != nil {
                reportVariable("headers", variable.name,
                               "header \(index + 1) has a name that is not an HTTP header name (letters, digits and !#$%&'*+-.^_`|~) "
                               + "or is one the exporter writes itself", draft: &draft)
            } else if let problem = Self.tracingHeaderValueProblem(value) {
                reportVariable("headers", variable.name, "header \(index + 1): \(problem)", draft: &draft)
            } else {
                let header = TracingHeader(name: pair.key, value: value)
                if let existing = draft.config.headers.firstIndex(where: { $0.name.lowercased() == pair.key.lowercased() }) {
                    draft.config.origins["headers.\(draft.config.headers[existing].name)"] = nil
                    draft.config.headers[existing] = header
                } else {
                    draft.config.headers.append(header)
                }
                draft.config.origins["headers.\(pair.key)"] = .environment(variable.name)
            }
        }
    }

    /// `OTEL_RESOURCE_ATTRIBUTES`: each attribute replaces the one with the same key or is appended.
    private mutating func applyAttributeVariable(_ variable: (name: String, value: String), to draft: inout TracingDraft) {
        switch OTelKeyValueList.parse(variable.value, decodeKeys: true) {
        case .failure(let problem):
            reportVariable("resourceAttributes", variable.name,
                           "\(problem.message); expected key=value pairs such as deployment.environment=prod,team=tokens", draft: &draft)
        case .success(let pairs):
            for pair in pairs {
                let attribute = TracingAttribute(key: pair.key, value: pair.value)
                if let existing = draft.config.resourceAttributes.firstIndex(where: { $0.key == pair.key }) {
                    draft.config.resourceAttributes[existing] = attribute
                } else {
                    draft.config.resourceAttributes.append(attribute)
                }
                draft.config.origins["resourceAttributes.\(pair.key)"] = .environment(variable.name)
            }
        }
    }

    // MARK: - Numbers

    /// A whole number of milliseconds greater than 0 (the OpenTelemetry timeouts and delays).
    private mutating func applyDurationVariable(
        _ target: (key: String, keyPath: WritableKeyPath<TracingConfig, Duration>), names: String..., to draft: inout TracingDraft
    ) {
        guard let variable = otelVariable(names) else { return }
        if let milliseconds = Int(variable.value), milliseconds > 0 {
            set(target.key, variable.name, in: &draft) { $0[keyPath: target.keyPath] = .milliseconds(milliseconds) }
        } else {
            reportVariable(target.key, variable.name, "expected a whole number of milliseconds greater than 0, got '\(variable.value)'",
                           draft: &draft)
        }
    }

    /// A count within `ConfigKeys.tracingBatchSize`.
    private mutating func applySizeVariable(
        _ target: (key: String, keyPath: WritableKeyPath<TracingConfig, Int>), name: String, to draft: inout TracingDraft
    ) {
        guard let variable = otelVariable(name) else { return }
        let range = ConfigKeys.tracingBatchSize
        if let size = Int(variable.value), range.contains(size) {
            set(target.key, variable.name, in: &draft) { $0[keyPath: target.keyPath] = size }
        } else {
            reportVariable(target.key, variable.name,
                           "expected a whole number from \(range.lowerBound) to \(range.upperBound), got '\(variable.value)'", draft: &draft)
        }
    }

    // MARK: - Helpers

    /// The first of `names` that is set and not empty (so a `_TRACES_` variable listed first
    /// wins), its value without surrounding whitespace.
    private func otelVariable(_ names: String...) -> (name: String, value: String)? {
        otelVariable(names)
    }

    private func otelVariable(_ names: [String]) -> (name: String, value: String)? {
        for name in names {
            guard let raw = environment[name] else { continue }
            let value = raw.trimmingCharacters(in: .whitespacesAndNewlines)
            if !value.isEmpty { return (name, value) }
        }
        return nil
    }

    /// Applies a variable's valid value and records where it came from.
    private func set(_ key: String, _ variable: String, in draft: inout TracingDraft, _ apply: (inout TracingConfig) -> Void) {
        apply(&draft.config)
        draft.config.origins[key] = .environment(variable)
    }

    /// A problem at `tracing.<key>` whose message starts with the variable's name; the key
    /// counts as invalid from then on.
    private mutating func reportVariable(_ key: String, _ variable: String, _ message: String, draft: inout TracingDraft) {
        report("tracing.\(key)", "\(variable): \(message)", line: nil)
        draft.invalid.insert(key)
    }

    /// Only OTLP over HTTP with protobuf bodies is exported. Checked only when tracing is on:
    /// an operator that injects `OTEL_EXPORTER_OTLP_PROTOCOL=grpc` into every container of a
    /// pod must not stop a sidecar that exports nothing.
    private mutating func checkTracingProtocol(_ draft: TracingDraft) {
        guard draft.config.enabled,
              let protocolVariable = otelVariable("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL"),
              protocolVariable.value != "http/protobuf" else { return }
        report("tracing", "\(protocolVariable.name): '\(protocolVariable.value)' is not supported; "
               + "token-sidecar exports OTLP over HTTP with protobuf bodies only (http/protobuf)", line: nil)
    }
}
