extension SidecarConfig {
    /// The `tracing:` lines of ``renderEffective()``: whether spans are exported (as a comment,
    /// `enabled` is not a key) and every effective value, with `# from OTEL_...` on values read
    /// from a variable. Header values are shown as `"****"`, never any character of them.
    func renderTracing() -> [String] {
        let tracing = self.tracing
        func variable(_ key: String) -> String? {
            if case .environment(let name) = tracing.origins[key] { return name }
            return nil
        }
        func comment(_ parts: String?...) -> String {
            let present = parts.compactMap { $0 }
            return present.isEmpty ? "" : "  # " + present.joined(separator: "; ")
        }
        func from(_ key: String) -> String? { variable(key).map { "from \($0)" } }

        var lines = ["tracing:  # " + Self.tracingState(tracing, disabledBy: variable("disabled"))]
        let endpointUnused = tracing.endpoint != nil && tracing.tracesEndpoint != nil ? "unused: tracesEndpoint wins" : nil
        lines.append("  endpoint: \(tracing.endpoint.map(Self.quote) ?? "null")" + comment(from("endpoint"), endpointUnused))
        lines.append("  tracesEndpoint: " + (tracing.tracesEndpoint.map { Self.quote($0) + comment(from("tracesEndpoint")) }
            ?? "null" + comment(tracing.endpoint.map { _ in "endpoint + /v1/traces" })))
        if tracing.headers.isEmpty {
            lines.append("  headers: {}")
        } else {
            lines.append("  headers:")
            lines += tracing.headers.map { "    \(Self.quote($0.name)): \"****\"" + comment(from("headers.\($0.name)")) }
        }
        let serviceNameSource = variable("serviceName").map { $0 == "OTEL_RESOURCE_ATTRIBUTES" ? "from \($0) (service.name)" : "from \($0)" }
        lines.append("  serviceName: \(Self.quote(tracing.serviceName))" + comment(serviceNameSource))
        if tracing.resourceAttributes.isEmpty {
            lines.append("  resourceAttributes: {}")
        } else {
            lines.append("  resourceAttributes:")
            lines += tracing.resourceAttributes.map {
                "    \(Self.quote($0.key)): \(Self.quote($0.value))" + comment(from("resourceAttributes.\($0.key)"))
            }
        }
        lines.append("  sampler: \(tracing.sampler.rawValue)" + comment(from("sampler")))
        let argumentUnused = tracing.sampler.usesRatio ? nil : "unused by \(tracing.sampler.rawValue)"
        lines.append("  samplerArg: \(tracing.samplerArg)" + comment(from("samplerArg"), argumentUnused))
        lines.append("  disabled: \(tracing.disabled)" + comment(from("disabled")))
        lines.append("  compression: \(tracing.compression.rawValue)" + comment(from("compression")))
        lines.append("  timeout: \(DurationText.format(tracing.timeout))" + comment(from("timeout")))
        lines.append("  batch:")
        lines.append("    maxQueueSize: \(tracing.maxQueueSize)" + comment(from("batch.maxQueueSize")))
        lines.append("    scheduleDelay: \(DurationText.format(tracing.scheduleDelay))" + comment(from("batch.scheduleDelay")))
        lines.append("    exportTimeout: \(DurationText.format(tracing.exportTimeout))" + comment(from("batch.exportTimeout")))
        lines.append("    maxExportBatchSize: \(tracing.maxExportBatchSize)" + comment(from("batch.maxExportBatchSize")))
        let tls = tracing.tls
        // Like everywhere else, TLS keys only where they apply: an https URL, or none yet and some set.
        if tracing.tracesEndpointURL?.isTLS ?? (tls != .default) {
            lines.append("  caFile: " + (tls.caFile.map { Self.quote($0) + comment(from("caFile")) } ?? "null  # the system trust store"))
            lines.append("  clientCert: " + (tls.clientCert.map { Self.quote($0) + comment(from("clientCert")) }
                ?? "null  # no client certificate"))
            lines.append("  clientKey: " + (tls.clientKey.map { Self.quote($0) + comment(from("clientKey")) } ?? "null"))
            lines.append("  insecureSkipVerify: \(tls.insecureSkipVerify)")
        }
        return lines
    }

    /// `enabled: true, spans go to "URL"`, or why not.
    private static func tracingState(_ tracing: TracingConfig, disabledBy variable: String?) -> String {
        if let url = tracing.tracesURL, tracing.enabled { return "enabled: true, spans go to \(quote(url))" }
        if tracing.disabled { return "enabled: false (" + (variable.map { "disabled by \($0)" } ?? "disabled: true") + ")" }
        return "enabled: false (no endpoint; set endpoint or OTEL_EXPORTER_OTLP_ENDPOINT to export spans)"
    }
}
