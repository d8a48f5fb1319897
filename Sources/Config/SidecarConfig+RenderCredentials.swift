extension SidecarConfig {
    /// `{rate: {perSecond: 50, burst: 100}, budget: {requests: 10000, per: day}}`.
    static func renderLimits(_ limits: LimitsConfig) -> String {
        var parts: [String] = []
        if let rate = limits.rate {
            parts.append("rate: {perSecond: \(rate.perSecondText), burst: \(rate.burst)}")
        }
        if let budget = limits.budget { parts.append("budget: {requests: \(budget.requests), per: \(budget.per.rawValue)}") }
        return "{\(parts.joined(separator: ", "))}"
    }

    /// The lines of one credential under `credentials:`. Secrets are masked
    /// (`"****"`); mca fields carry a comment saying where they came from.
    static func renderCredential(_ credential: CredentialConfig) -> [String] {
        var lines = ["  \(quote(credential.name)):", "    type: \(credential.kind.typeName)"]
        switch credential.placeholder {
        case .value?: lines.append("    placeholder: \"****\"  # swapped for the token on routes with this credential")
        case .file(let path)?: lines.append("    placeholderFile: \(quote(path))  # read, or generated (tsp_…) and written at start")
        case nil: break
        }
        if let limits = credential.limits { lines.append("    limits: \(renderLimits(limits))  # every route together") }
        switch credential.kind {
        case .staticToken(let config):
            lines.append("    " + secretLine(config.source, keys: ("token", "tokenFile", "tokenEnv")))
        case .mca(let config):
            let clientId = config.clientId.map(quote) ?? "null"
            var fields: [(name: String, line: String)] = [
                ("serverUrl", "serverUrl: \(quote(config.serverUrl.description))"),
                ("tenantId", "tenantId: \(quote(config.tenantId))"),
                ("clientId", "clientId: \(clientId)"),
                ("auth", "auth: \(config.auth.rawValue)"),
            ]
            if let secret = config.secret { fields.append(("secret", secretLine(secret, keys: ("secret", "secretFile", "secretEnv")))) }
            if let files = config.certificate {
                fields.append(("clientCert", "clientCert: \(quote(files.certificate))"))
                fields.append(("clientKey", "clientKey: \(quote(files.key))"))
            }
            for field in fields {
                let comment = config.origins[field.name].map { "  # \(originComment($0))" } ?? ""
                lines.append("    \(field.line)\(comment)")
            }
            lines += fetchLines(config.fetch) + tlsLines(config.tls, indent: "    ", isTLS: config.serverUrl.isTLS)
        case .aws(let config):
            lines.append("    placeholderAccessKeyId: \(quote(config.placeholderAccessKeyId))  # what the app signs with")
            switch config.source {
            case .files(let id, let secret, let session):
                lines.append("    accessKeyIdFile: \(quote(id))  # re-read when it changes")
                lines.append("    secretAccessKeyFile: \(quote(secret))")
                if let session { lines.append("    sessionTokenFile: \(quote(session))") }
            case .webIdentity(let identity):
                lines.append("    webIdentity:")
                lines.append("      roleArn: \(quote(identity.roleArn))")
                lines.append("      tokenFile: \(quote(identity.tokenFile))  # read before every call")
                lines.append("      stsEndpoint: \(quote(identity.stsEndpoint.description))")
                lines.append("      sessionName: \(quote(identity.sessionName))")
                if let duration = identity.duration { lines.append("      duration: \(DurationText.format(duration))") }
                lines += tlsLines(config.tls, indent: "      ", isTLS: identity.stsEndpoint.isTLS)
                lines += fetchLines(config.fetch)
            case .containerCredentials(let container):
                lines.append("    containerCredentials:")
                lines.append("      uri: \(quote(container.uri.description))")
                if let file = container.authorizationTokenFile { lines.append("      authorizationTokenFile: \(quote(file))  # read before every call") }
                lines += tlsLines(config.tls, indent: "      ", isTLS: container.uri.isTLS)
                lines += fetchLines(config.fetch)
            }
        case .googleServiceAccount(let config):
            lines.append("    keyFile: \(quote(config.keyFile))  # re-read when it changes")
            if let scope = config.scope { lines.append("    scope: \(quote(scope))") }
            if let audience = config.targetAudience { lines.append("    targetAudience: \(quote(audience))  # an ID token") }
            if let subject = config.subject { lines.append("    subject: \(quote(subject))") }
            lines += fetchLines(config.fetch) + tlsLines(config.tls, indent: "    ", isTLS: true)
        case .oauth2(let config):
            lines.append("    tokenUrl: \(quote(config.tokenUrl.description))")
            lines.append("    clientId: " + (config.clientId.isEmpty ? "null  # none sent (a public client)" : quote(config.clientId)))
            lines.append("    auth: \(config.auth.rawValue)")
            switch config.grant {
            case .clientCredentials:
                lines.append("    grant: client_credentials")
            case .refreshToken(let file):
                lines.append("    grant: refresh_token")
                lines.append("    refreshTokenFile: \(quote(file))  # rewritten (0600) each time the server rotates the refresh token")
            case .jwtBearer(let subject):
                lines.append("    grant: jwt_bearer  # RFC 7523 §2.1: an assertion signed with signingKeyFile")
                if let subject { lines.append("    assertionSubject: \(quote(subject))") }
            case .sts(let file, let type):
                lines.append("    grant: token_exchange")
                lines.append("    subjectTokenFile: \(quote(file))  # re-read before every exchange")
                lines.append("    subjectTokenType: \(quote(type))")
            }
            if let secret = config.secret { lines.append("    " + secretLine(secret, keys: ("secret", "secretFile", "secretEnv"))) }
            if let assertion = config.assertion {
                if let file = assertion.signingKeyFile { lines.append("    signingKeyFile: \(quote(file))") }
                lines.append("    signingKeyId: \(assertion.keyId.map(quote) ?? "null")")
                lines.append("    assertionAudience: " + (assertion.audience.map(quote)
                    ?? "\(quote(config.tokenUrl.description))  # default: the tokenUrl"))
                lines.append("    assertionLifetime: \(DurationText.format(assertion.lifetime))")
            }
            if let file = config.assertionFile { lines.append("    assertionFile: \(quote(file))  # re-read before every fetch") }
            for (key, value) in [("scope", config.scope), ("audience", config.audience), ("resource", config.resource)] {
                lines.append("    \(key): \(value.map(quote) ?? "null")")
            }
            if config.params.isEmpty {
                lines.append("    params: {}")
            } else {
                lines.append("    params:")
                lines += config.params.map { "      \(quote($0.name)): \(quote($0.value))" }
            }
            switch config.dpop {
            case nil: lines.append("    dpop: false  # bearer tokens")
            case .generated: lines.append("    dpop: true  # a P-256 key generated in memory at start")
            case .keyFile(let file): lines += ["    dpop:", "      keyFile: \(quote(file))  # re-read when it changes"]
            }
            lines += fetchLines(config.fetch) + tlsLines(config.tls, indent: "    ", isTLS: config.tokenUrl.isTLS)
        }
        return lines
    }

    /// `"from the config file"`, `"from VCAP_SERVICES"`, ... or `"default"`.
    static func originComment(_ origin: ValueOrigin) -> String {
        origin == .defaultValue ? "default" : "from \(origin)"
    }

    /// `token: "****"`, `tokenFile: "/path"` or `tokenEnv: "VAR"` (or the `secret` keys).
    private static func secretLine(_ source: SecretSource, keys: (inline: String, file: String, env: String)) -> String {
        switch source {
        case .inline: return "\(keys.inline): \"****\""
        case .file(let path): return "\(keys.file): \(quote(path))"
        case .env(let name): return "\(keys.env): \(quote(name))"
        }
    }

    private static func fetchLines(_ fetch: TokenFetchSettings) -> [String] {
        [
            "    refreshAt: \(quote(DurationText.percentage(fetch.refreshAt)))",
            "    defaultLifetime: \(DurationText.format(fetch.defaultLifetime))",
            "    tokenWait: \(DurationText.format(fetch.tokenWait))",
            "    unauthorizedRefetchInterval: \(DurationText.format(fetch.unauthorizedRefetchInterval))",
        ]
    }

    /// The TLS keys, only for https URLs (elsewhere they are not allowed).
    static func tlsLines(_ tls: TLSSettings, indent: String, isTLS: Bool) -> [String] {
        guard isTLS else { return [] }
        return [
            indent + "caFile: " + (tls.caFile.map(quote) ?? "null  # the system trust store"),
            indent + "clientCert: " + (tls.clientCert.map(quote) ?? "null  # no client certificate"),
            indent + "clientKey: " + (tls.clientKey.map(quote) ?? "null"),
            indent + "insecureSkipVerify: \(tls.insecureSkipVerify)",
        ]
    }
}
