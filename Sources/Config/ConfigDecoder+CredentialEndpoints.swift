import Yams

/// `credentialEndpoints:` (issue 69).
extension ConfigDecoder {
    /// The section, checked against the decoded `credentials`; nil when absent or invalid.
    mutating func decodeCredentialEndpoints(_ node: Node?, credentials: [CredentialConfig]) -> CredentialEndpointsConfig? {
        guard let node, !Self.isNull(node) else { return nil }
        let expected = "a mapping with listen and one or more of \(CredentialEndpoint.Kind.allCases.map(\.rawValue).joined(separator: ", "))"
        guard let entries = mapping(node, path: "credentialEndpoints", expected: expected) else { return nil }
        checkKeys(entries, allowed: ConfigKeys.credentialEndpoints, path: "credentialEndpoints")
        let fields = Self.index(entries)
        var section = CredentialEndpointsConfig()
        let before = problems.count
        if case .value(let text) = string(fields["listen"], path: "credentialEndpoints.listen") {
            switch ListenAddress.parse(text) {
            case .success(let address): section.listen = address
            case .failure(let error):
                report("credentialEndpoints.listen", "invalid address '\(text)': \(error.message)", at: fields["listen"])
            }
        }
        if case .value(let allowed) = bool(fields["allowNonLoopback"], path: "credentialEndpoints.allowNonLoopback") {
            section.allowNonLoopback = allowed
        }
        if !section.allowNonLoopback && !CredentialEndpointsConfig.isLoopback(section.listen.host) {
            report("credentialEndpoints.listen", "\(section.listen) is not a loopback address: the endpoints hand out credentials to whoever reaches them; listen on 127.0.0.1 or ::1, or set allowNonLoopback: true", at: fields["listen"])
        }
        for kind in CredentialEndpoint.Kind.allCases {
            guard let entry = fields[kind.rawValue] else { continue }
            if let endpoint = decodeCredentialEndpoint(entry, kind: kind, credentials: credentials) {
                section.endpoints.append(endpoint)
            }
        }
        if section.endpoints.isEmpty && problems.count == before {
            report("credentialEndpoints", "no endpoint configured: add one or more of \(CredentialEndpoint.Kind.allCases.map(\.rawValue).joined(separator: ", "))", at: node)
        }
        return problems.count == before ? section : nil
    }

    private mutating func decodeCredentialEndpoint(_ node: Node, kind: CredentialEndpoint.Kind, credentials: [CredentialConfig]) -> CredentialEndpoint? {
        let path = "credentialEndpoints.\(kind.rawValue)"
        guard let entries = mapping(node, path: path, expected: "a mapping with credential") else { return nil }
        checkKeys(entries, allowed: ConfigKeys.credentialEndpoint(kind), path: path)
        let fields = Self.index(entries)
        guard case .value(let name) = string(fields["credential"], path: "\(path).credential") else {
            if fields["credential"] == nil { report("\(path).credential", "required: the credential this endpoint hands out", at: node) }
            return nil
        }
        guard let credential = credentials.first(where: { $0.name == name }) else {
            let suggestion = Suggestions.closest(to: name, in: credentials.map(\.name)).map { " (did you mean '\($0)'?)" } ?? ""
            report("\(path).credential", "no credential named '\(name)'\(suggestion)", at: fields["credential"])
            return nil
        }
        var endpoint = CredentialEndpoint(kind: kind, credential: name)
        if case .value(let real) = bool(fields["realTokens"], path: "\(path).realTokens") { endpoint.realTokens = real }
        for (key, keyPath) in [("tenantId", \CredentialEndpoint.tenantId), ("clientId", \.clientId), ("projectId", \.projectId),
                               ("email", \.email)] {
            if case .value(let text) = plainText(fields[key], path: "\(path).\(key)") { endpoint[keyPath: keyPath] = text }
        }
        if case .value(let text) = plainText(fields["path"], path: "\(path).path") {
            if text.first == "/" && !text.contains("?") {
                endpoint.path = text
            } else {
                report("\(path).path", "expected a path starting with / and without a query", at: fields["path"])
            }
        }
        if let key = endpoint.secretFileKey {
            if case .value(let file) = plainText(fields[key], path: "\(path).\(key)") {
                endpoint.secretFile = resolve(path: file)
            } else if fields[key] == nil {
                let what = kind == .azure ? "the file holding the X-IDENTITY-HEADER value apps send (IDENTITY_HEADER)"
                    : "the file holding the token apps send (AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE)"
                report("\(path).\(key)", "required: \(what)", at: node)
            }
        }
        checkEndpointCredential(endpoint, credential, path: path, node: node)
        return endpoint
    }

    /// Whether `credential` can serve `endpoint`: its type, the identifiers the answers need, and
    /// a placeholder to hand out unless the endpoint gives real tokens.
    private mutating func checkEndpointCredential(_ endpoint: CredentialEndpoint, _ credential: CredentialConfig, path: String, node: Node) {
        let name = credential.name
        switch (endpoint.kind, credential.kind) {
        case (.aws, .aws):
            break  // its placeholder is placeholderAccessKeyId
        case (.aws, _):
            report("\(path).credential", "\(name) is of type \(credential.kind.typeName); the AWS endpoint needs a credential of type aws", at: node)
            return
        case (_, .aws):
            report("\(path).credential", "\(name) is of type aws; it can only be served by the aws endpoint", at: node)
            return
        case (.mca, _), (.oauth2, _):
            if endpoint.clientId == nil && credential.clientId == nil {
                report("\(path).clientId", "required: \(name) has no client id of its own (or takes it from its certificate); say which client id apps present", at: node)
            }
            if endpoint.kind == .mca, endpoint.tenantId == nil, !credential.isMCA {
                report("\(path).tenantId", "required: \(name) is not an mca credential; say which tenant id apps ask for", at: node)
            }
        case (.gce, _):
            if endpoint.projectId == nil { report("\(path).projectId", "required: the project id the metadata server reports", at: node) }
            if endpoint.email == nil { report("\(path).email", "required: the service account email the metadata server reports", at: node) }
        case (.azure, _):
            break
        }
        if endpoint.realTokens && credential.neverExpires {
            report("\(path).realTokens", "\(name)'s token never expires (\(credential.kind.typeName)\(credential.kind.typeName == "aws" ? " keys from files" : "")): realTokens would hand the app a long-lived secret; give \(name) a placeholder and leave realTokens out", at: node)
        }
        if !endpoint.realTokens && credential.placeholder == nil && endpoint.kind != .aws {
            report("\(path).credential", "\(name) has no placeholder to hand out: give it placeholder or placeholderFile (apps then never hold its token), or set realTokens: true on this endpoint (weaker: the app holds the real token)", at: node)
        }
    }
}
