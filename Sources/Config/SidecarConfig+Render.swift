extension SidecarConfig {
    /// The effective configuration as YAML text for `token-sidecar check`:
    /// every key with its effective value (defaults filled in, host patterns
    /// and upstreams with explicit ports, relative token file paths
    /// resolved). Secrets are masked: an inline token or secret (also one
    /// discovered from `VCAP_SERVICES`) is shown as `"****"` (never any
    /// character of it); file and environment sources are shown as
    /// `tokenFile: /path` / `secretFile: /path` and `tokenEnv: VAR` /
    /// `secretEnv: VAR`. The fields of an `mca` credential end in a comment
    /// saying where the value came from (`# from VCAP_SERVICES`). TLS keys
    /// appear only for https URLs. `tracing:` shows every effective value,
    /// `# from OTEL_...` on those read from a variable, and header names
    /// only (values as `"****"`).
    ///
    /// `$` is written as `$$`, so apart from masked inline secrets the output
    /// loads back as the same configuration (discovered mca values then
    /// count as written in the file).
    public func renderEffective() -> String {
        var lines: [String] = [
            "# effective configuration of \(file)",
            "listen: \(Self.quote(listen.description))",
            "workers: \(workers)",
            "logLevel: \(logLevel.rawValue)",
            "otherHosts: \(otherHosts.rawValue)",
            "cacheSize: \(cacheSize)",
            "maxConnectionsPerUpstream: \(maxConnectionsPerUpstream)",
            maxClientConnections.map { "maxClientConnections: \($0)" }
                ?? "maxClientConnections: null  # derived from the descriptor limit at start",
            "admin: \(Self.quote(admin.description))",
            "accessLog: \(accessLog)",
            "drainTimeout: \(DurationText.format(drainTimeout))",
            "timeouts:",
            "  connect: \(DurationText.format(timeouts.connect))",
            "  responseHeaders: \(DurationText.format(timeouts.responseHeaders))",
            "  clientHeader: \(DurationText.format(timeouts.clientHeader))",
            "  idle: \(DurationText.format(timeouts.idle))",
            "  upstreamIdle: \(DurationText.format(timeouts.upstreamIdle))",
            "  bodyIdle: \(DurationText.format(timeouts.bodyIdle))",
            "  upgradedIdle: \(DurationText.format(timeouts.upgradedIdle))",
            "spool:",
            "  directory: \(Self.quote(spool.directory))",
            "  maxBytes: \(ByteSize.format(spool.maxBytes))",
        ]
        switch connectPolicy {
        case .deny:
            lines.append("connect: deny")
        case .allow(let destinations):
            lines.append("connect:")
            lines.append("  allow:")
            lines += destinations.map { "    - \(Self.quote($0))" }
        }
        lines += renderSharedCache()
        if let audit { lines.append("audit: {file: \(Self.quote(audit.file))}") }
        if let credentialEndpoints { lines += Self.render(credentialEndpoints) }
        lines.append("enforcement: \(enforcement.rawValue)")
        if let intercept {
            lines.append("intercept:")
            lines.append("  caCertFile: \(Self.quote(intercept.caCertFile))")
            if let key = intercept.caKeyFile {
                lines.append("  caKeyFile: \(Self.quote(key))  # operator-provided CA")
            } else {
                lines.append("  caKeyFile: null  # a new CA is generated at every start, its key kept in memory")
            }
            lines.append("  bundleFile: \(intercept.bundleFile.map(Self.quote) ?? "null")")
            lines.append("  caValidity: \(DurationText.format(intercept.caValidity))")
        }
        lines += renderTracing()
        if credentials.isEmpty {
            lines.append("credentials: {}")
        } else {
            lines.append("credentials:")
            for credential in credentials {
                lines += Self.renderCredential(credential)
            }
        }
        if routes.isEmpty {
            lines.append("routes: []")
        } else {
            lines.append("routes:")
            for route in routes {
                lines.append("  - host: \(Self.quote(route.host.description))")
                if let upstream = route.upstream {
                    lines.append("    upstream: \(Self.quote(upstream.description))")
                } else {
                    lines.append(route.intercept ? "    upstream: null  # the requested destination, over verified TLS"
                                                 : "    upstream: null  # the requested destination")
                }
                if route.intercept { lines.append("    intercept: true") }
                lines.append("    upgrades: [\((["websocket"] + route.upgrades).map(Self.quote).joined(separator: ", "))]")
                if let lifetime = route.maxUpgradedLifetime {
                    lines.append("    maxUpgradedLifetime: \(DurationText.format(lifetime))")
                }
                lines.append("    preserveHost: \(route.preserveHost)")
                lines.append("    upstreamProtocol: \(route.upstreamProtocol.rawValue)")
                lines += Self.tlsLines(route.tls, indent: "    ", isTLS: route.upstream?.isTLS ?? route.intercept)
                if let credential = route.credential {
                    lines.append("    credential: \(Self.quote(credential))")
                    lines.append("    clientAuthorization: \(route.clientAuthorization.rawValue)")
                    if route.clientAuthorization == .replace {
                        lines.append("    inject: " + Self.renderPlacement(route.placement))
                    }
                    if route.presentsCredentialCertificate {
                        lines.append("    clientCertificate: credential  # RFC 8705 §3: the certificate the token is bound to")
                    }
                    if let exchange = route.exchange {
                        lines.append("    exchange:  # RFC 8693: the caller's Authorization: Bearer token is the subject")
                        for (key, value) in [("audience", exchange.audience), ("scope", exchange.scope), ("resource", exchange.resource),
                                             ("requestedTokenType", exchange.requestedTokenType)] {
                            lines.append("      \(key): \(value.map(Self.quote) ?? "null")")
                        }
                        lines.append("      subjectTokenType: \(Self.quote(exchange.subjectTokenType))")
                        if let file = exchange.actorTokenFile {
                            lines.append("      actorTokenFile: \(Self.quote(file))  # re-read before every exchange")
                            lines.append("      actorTokenType: \(Self.quote(exchange.actorTokenType))")
                        }
                    }
                    if let requested = route.requested {
                        if let header = requested.scopeHeader {
                            lines.append("    scopeHeader: \(Self.quote(header))")
                            lines.append("    allowedScopes: [\(requested.allowedScopes.map(Self.quote).joined(separator: ", "))]")
                        }
                        if let header = requested.audienceHeader {
                            lines.append("    audienceHeader: \(Self.quote(header))")
                            lines.append("    allowedAudiences: [\(requested.allowedAudiences.map(Self.quote).joined(separator: ", "))]")
                        }
                    }
                } else {
                    lines.append("    credential: null  # no token injected")
                }
                if let limits = route.limits { lines.append("    limits: \(Self.renderLimits(limits))") }
                if let policy = route.policy {
                    lines.append("    enforcement: \(policy.enforcement.rawValue)")
                    lines.append("    rules:  # the first match allows; anything else is denied")
                    for rule in policy.rules {
                        var parts = ["name: \(Self.quote(rule.name))"]
                        if !rule.methods.isEmpty { parts.append("methods: [\(rule.methods.joined(separator: ", "))]") }
                        if !rule.paths.isEmpty { parts.append("paths: [\(rule.paths.map { Self.quote($0.description) }.joined(separator: ", "))]") }
                        lines.append("      - {\(parts.joined(separator: ", "))}")
                    }
                }
            }
        }
        return lines.joined(separator: "\n") + "\n"
    }

    /// `routes[].inject` as flow YAML; the token shows as `{token}`, never a value.
    static func renderPlacement(_ placement: CredentialPlacement?) -> String {
        switch placement {
        case nil:
            return "{header: \"Authorization\", format: \"Bearer {token}\"}  # the default (DPoP {token} for a DPoP-bound token)"
        case .header(let name, let prefix, let suffix)?:
            return "{header: \(quote(name)), format: \(quote(prefix + "{token}" + suffix))}"
        case .query(let name)?:
            return "{query: \(quote(name))}  # appended to the target, percent-encoded"
        case .basic(.pair)?:
            return "{basic: pair}  # the token is user:secret"
        case .basic(.tokenAsUsername(let password))?:
            return "{basic: {username: \"{token}\", password: \(quote(password))}}"
        case .basic(.tokenAsPassword(let username))?:
            return "{basic: {username: \(quote(username)), password: \"{token}\"}}"
        case .sigv4(let settings)?:
            let regions = settings.allowedRegions.map(quote).joined(separator: ", ")
            let services = settings.allowedServices.map(quote).joined(separator: ", ")
            return "{sigv4: {allowedRegions: [\(regions)], allowedServices: [\(services)], signUnsigned: \(settings.signUnsigned), maxHashedBody: \(ByteSize.format(settings.maxHashedBody))}}"
        }
    }

    /// A YAML double-quoted scalar, with `$` doubled so the loader's
    /// `${VAR}` expansion gives the original text back.
    static func quote(_ text: String) -> String {
        var out = "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "$": out += "$$"
            case "\n": out += "\\n"
            case "\t": out += "\\t"
            default:
                if scalar.value < 0x20 || scalar.value == 0x7F {
                    out += "\\x" + String(scalar.value, radix: 16).leftPadded(to: 2)
                } else {
                    out.unicodeScalars.append(scalar)
                }
            }
        }
        return out + "\""
    }
}

private extension String {
    func leftPadded(to width: Int) -> String {
        count >= width ? self : String(repeating: "0", count: width - count) + self
    }
}

extension SidecarConfig {
    /// `credentialEndpoints:`: the listener (a non-loopback one marked) and each endpoint on a line.
    fileprivate static func render(_ section: CredentialEndpointsConfig) -> [String] {
        var lines = ["credentialEndpoints:", "  listen: \(quote(section.listen.description))"]
        if section.allowNonLoopback {
            let loopback = CredentialEndpointsConfig.isLoopback(section.listen.host)
            lines.append("  allowNonLoopback: true" + (loopback ? "" : "  # NOT loopback: whoever reaches \(section.listen) gets these credentials"))
        }
        for endpoint in section.endpoints {
            var fields = ["credential: \(quote(endpoint.credential))"]
            if endpoint.realTokens { fields.append("realTokens: true") }
            for (key, value) in [("tenantId", endpoint.tenantId), ("clientId", endpoint.clientId), ("path", endpoint.path),
                                 ("projectId", endpoint.projectId), ("email", endpoint.email)] {
                if let value { fields.append("\(key): \(quote(value))") }
            }
            if let key = endpoint.secretFileKey, let file = endpoint.secretFile { fields.append("\(key): \(quote(file))") }
            let comment = endpoint.realTokens ? "  # hands out the real token (weaker)" : ""
            lines.append("  \(endpoint.kind.rawValue): {\(fields.joined(separator: ", "))}\(comment)")
        }
        return lines
    }
}
