import Yams

extension ConfigDecoder {
    /// Decodes `routes:`, checking host patterns for duplicates and that each
    /// `credential` names a declared credential.
    mutating func decodeRoutes(_ node: Node?, credentialNames: [String], credentials: [CredentialConfig] = []) -> [RouteConfig] {
        let kinds = Dictionary(credentials.map { ($0.name, $0.kind) }, uniquingKeysWith: { first, _ in first })
        guard let node, !Self.isNull(node) else { return [] }
        guard case .sequence(let sequence) = node else {
            report("routes", "expected a list of routes, got \(Self.describe(node))", at: node)
            return []
        }
        var routes: [RouteConfig] = []
        var firstIndexByPattern: [HostPattern: Int] = [:]
        for (index, item) in sequence.enumerated() {
            let path = "routes[\(index)]"
            guard let entries = mapping(item, path: path, expected: "a mapping with at least 'host'") else { continue }
            checkKeys(entries, allowed: ConfigKeys.route, path: path)
            let fields = Self.index(entries)
            var valid = true

            var pattern: HostPattern?
            switch string(fields["host"], path: "\(path).host") {
            case .absent:
                report("\(path).host", "required key is missing (e.g. host: api.example.com or host: \"*.example.com\")", at: item)
                valid = false
            case .invalid:
                valid = false
            case .value(let text):
                switch HostPattern.parse(text) {
                case .success(let parsed):
                    if let first = firstIndexByPattern[parsed] {
                        report("\(path).host", "duplicate route for \(parsed) (already defined by routes[\(first)].host)", at: fields["host"])
                        valid = false
                    } else {
                        firstIndexByPattern[parsed] = index
                        pattern = parsed
                    }
                case .failure(let error):
                    report("\(path).host", "invalid host pattern '\(text)': \(error.message)", at: fields["host"])
                    valid = false
                }
            }

            var upstream: UpstreamAddress?
            var upstreamInvalid = false
            switch string(fields["upstream"], path: "\(path).upstream") {
            case .absent: break
            case .invalid: upstreamInvalid = true
            case .value(let text):
                switch UpstreamAddress.parse(text) {
                case .success(let parsed): upstream = parsed
                case .failure(let error):
                    report("\(path).upstream", "invalid upstream '\(text)': \(error.message)", at: fields["upstream"])
                    upstreamInvalid = true
                }
            }
            if upstreamInvalid { valid = false }

            var preserveHost = false
            switch bool(fields["preserveHost"], path: "\(path).preserveHost") {
            case .absent: break
            case .invalid: valid = false
            case .value(let value): preserveHost = value
            }

            var credential: String?
            switch string(fields["credential"], path: "\(path).credential") {
            case .absent: break
            case .invalid: valid = false
            case .value(let name):
                if credentialNames.contains(name) {
                    credential = name
                } else {
                    report("\(path).credential", Self.unknownCredentialMessage(name, known: credentialNames), at: fields["credential"])
                    valid = false
                }
            }

            var clientAuthorization = ClientAuthorizationPolicy.replace
            switch choice(fields["clientAuthorization"], path: "\(path).clientAuthorization", as: ClientAuthorizationPolicy.self) {
            case .absent: break
            case .invalid: valid = false
            case .value(let policy):
                if fields["credential"] == nil || Self.isNull(fields["credential"]!) {
                    report("\(path).clientAuthorization", "only applies to a route with a credential (nothing is injected here, so there is nothing to replace or keep)", at: fields["clientAuthorization"])
                    valid = false
                }
                clientAuthorization = policy
            }

            var intercept = false
            switch bool(fields["intercept"], path: "\(path).intercept") {
            case .absent: break
            case .invalid: valid = false
            case .value(let value): intercept = value
            }
            if intercept, let chosen = pattern {
                // Port 80 only when written out: `host: api.example.com` alone is a plain route's
                // form, and the usual mistake for `:443`. Apps CONNECT to port 80 for `ws://` URLs
                // (RFC 6455 §4.1), and speak plaintext HTTP inside (`Interception`).
                let plaintextPort = chosen.port == 80
                if plaintextPort, case .value(let text) = string(fields["host"], path: "\(path).host"), !text.hasSuffix(":80") {
                    report("\(path).intercept", "an intercepting route names the port apps CONNECT to, e.g. host: \"\(chosen.description.dropLast(3)):443\" (or :80, written out, for ws:// and http:// URLs)", at: fields["host"])
                    valid = false
                }
                // An http:// upstream serves plaintext tunnels only (a ClientHello in such a
                // tunnel is refused: never weaker than the app's own connection), e.g. a gRPC
                // app's h2c to orders.internal:50051. On 443 it can only be a mistake.
                if let given = upstream, !given.isTLS, chosen.port == 443 {
                    report("\(path).upstream", "an intercepting route on port 443 sends to an https:// upstream (never weaker than the app's own connection); got \(given)", at: fields["upstream"])
                    valid = false
                }
                if upstream == nil, !upstreamInvalid, case .exact(let name) = chosen.kind {
                    // The app's own destination: over TLS the sidecar verifies, or on port 80 as
                    // plaintext as the app itself would have sent it.
                    upstream = UpstreamAddress(scheme: plaintextPort ? "http" : "https", host: name, port: chosen.port)
                }
            }
            let upgrades = decodeUpgrades(fields["upgrades"], path: "\(path).upgrades")
            if upgrades == nil { valid = false }
            var maxUpgradedLifetime: Duration?
            switch duration(fields["maxUpgradedLifetime"], path: "\(path).maxUpgradedLifetime") {
            case .absent: break
            case .invalid: valid = false
            case .value(let value):
                if value > .zero {
                    maxUpgradedLifetime = value
                } else {
                    report("\(path).maxUpgradedLifetime", "must be greater than 0", at: fields["maxUpgradedLifetime"])
                    valid = false
                }
            }

            let upstreamProtocol = decodeUpstreamProtocol(fields, path: path, upstream: upstreamInvalid ? nil : upstream,
                                                          checkScheme: !upstreamInvalid)
            if upstreamProtocol == nil { valid = false }

            let tls = decodeTLSSettings(fields, path: path)
            if tls.settings == nil { valid = false }
            if !tls.given.isEmpty, !upstreamInvalid, upstream?.isTLS != true, !intercept {
                let reason = upstream.map { "upstream is \($0)" } ?? "this route has no upstream; requests go to the requested http destination"
                rejectTLSKeys(tls.given, fields: fields, path: path, reason: reason)
                valid = false
            }

            var exchange: STSSettings?
            if clientAuthorization == .exchange {
                exchange = decodeSTS(fields["exchange"], path: "\(path).exchange")
                if exchange == nil { valid = false }
                if let name = credential, let kind = kinds[name] {
                    guard case .oauth2(let oauth) = kind, oauth.grant == .clientCredentials else {
                        report("\(path).clientAuthorization", "exchange trades the caller's token at the credential's token endpoint: '\(name)' must be an oauth2 credential with grant: client_credentials", at: fields["clientAuthorization"])
                        valid = false
                        break
                    }
                }
            } else if let node = fields["exchange"], !Self.isNull(node) {
                report("\(path).exchange", "is only used with clientAuthorization: exchange", at: node)
                valid = false
            }
            let requested = decodeRequested(fields, path: path)
            if !requested.valid { valid = false }
            if requested.settings != nil {
                let headers = ["scopeHeader", "audienceHeader"].filter { fields[$0] != nil }.joined(separator: " and ")
                if credential == nil, fields["credential"].map({ Self.isNull($0) }) ?? true {
                    // Absent or null; a credential that did not decode was reported already.
                    report("\(path).credential", "required with \(headers): per-request tokens come from the route's oauth2 credential", at: fields["credential"] ?? item)
                    valid = false
                } else if let name = credential, let kind = kinds[name], !kind.isOAuth2 {
                    report("\(path).credential", "'\(name)' is a \(kind.typeName) credential, which fetches no token per scope or audience; \(headers) need an oauth2 credential", at: fields["credential"])
                    valid = false
                } else if let name = credential, case .oauth2(let oauth)? = kinds[name], oauth.grant != .clientCredentials {
                    report("\(path).credential", "'\(name)' has grant: \(oauth.grant.name); \(headers) choose among client_credentials tokens (a file subject's identity is not the client's)", at: fields["credential"])
                    valid = false
                }
                if clientAuthorization == .keep {
                    report("\(path).clientAuthorization", "keep forwards the app's own token; it does not combine with scopeHeader or audienceHeader", at: fields["clientAuthorization"])
                    valid = false
                }
            }

            let placement = decodePlacement(fields, path: path, credential: credential, kinds: kinds,
                                            clientAuthorization: clientAuthorization)
            if !placement.valid { valid = false }

            let policy = decodePolicy(fields, path: path)
            if !policy.valid { valid = false }
            let limits = decodeLimits(fields["limits"], path: Self.join(path, "limits"))
            if !limits.valid { valid = false }

            let presentsCertificate = decodeClientCertificate(fields, path: path, credential: credential, kinds: kinds,
                                                              upstream: upstream, tlsGiven: tls.given)
            if presentsCertificate == nil { valid = false }

            if intercept, tls.settings?.insecureSkipVerify == true {
                // The app verified its own connection; what the sidecar sends on must be no weaker.
                report("\(path).insecureSkipVerify", "an intercepting route always verifies its upstream (the app's own connection would have); use caFile to trust a private CA", at: fields["insecureSkipVerify"])
                valid = false
            }

            if valid, let pattern, let tlsSettings = tls.settings {
                routes.append(RouteConfig(
                    host: pattern, upstream: upstream, preserveHost: preserveHost, credential: credential, tls: tlsSettings,
                    clientAuthorization: clientAuthorization, intercept: intercept, exchange: exchange,
                    requested: requested.settings, presentsCredentialCertificate: presentsCertificate ?? false,
                    upgrades: upgrades ?? [], maxUpgradedLifetime: maxUpgradedLifetime,
                    upstreamProtocol: upstreamProtocol ?? .auto, placement: placement.placement, policy: policy.policy))
                routes[routes.count - 1].limits = limits.limits
            }
        }
        return routes
    }

    /// `upstreamProtocol:`; nil when it is invalid. `h2` needs an `https://` upstream and `h2c` an
    /// `http://` one (an intercepting route's default upstream counts: https, or http on port 80).
    private mutating func decodeUpstreamProtocol(_ fields: [String: Node], path: String, upstream: UpstreamAddress?,
                                                 checkScheme: Bool) -> UpstreamProtocol? {
        let keyPath = "\(path).upstreamProtocol"
        switch choice(fields["upstreamProtocol"], path: keyPath, as: UpstreamProtocol.self) {
        case .absent: return .auto
        case .invalid: return nil
        case .value(let chosen):
            guard checkScheme else { return chosen }
            switch chosen {
            case .auto, .http1:
                return chosen
            case .h2, .h2c:
                guard let upstream else {
                    report(keyPath, "\(chosen.rawValue) needs the route's upstream (a route without one sends each request where it asks to go, over HTTP/1.1)", at: fields["upstreamProtocol"])
                    return nil
                }
                if chosen == .h2, !upstream.isTLS {
                    report(keyPath, "h2 is HTTP/2 over TLS: the upstream must be https:// (use h2c for plaintext HTTP/2); got \(upstream)", at: fields["upstreamProtocol"])
                    return nil
                }
                if chosen == .h2c, upstream.isTLS {
                    report(keyPath, "h2c is plaintext HTTP/2: the upstream must be http:// (use h2 or auto for https); got \(upstream)", at: fields["upstreamProtocol"])
                    return nil
                }
                return chosen
            }
        }
    }

    /// `clientCertificate: credential`: the upstream TLS presents the certificate the route's
    /// credential authenticates with (its tokens are bound to it, RFC 8705 §3). Needs an https
    /// upstream, a credential with `tls_client_auth` or `self_signed_tls_client_auth`, and no
    /// route certificate of its own. Nil on a problem.
    private mutating func decodeClientCertificate(_ fields: [String: Node], path: String, credential: String?,
                                                  kinds: [String: CredentialKind], upstream: UpstreamAddress?,
                                                  tlsGiven: [String]) -> Bool? {
        let keyPath = "\(path).clientCertificate"
        switch string(fields["clientCertificate"], path: keyPath) {
        case .absent:
            return false
        case .invalid:
            return nil
        case .value(let text):
            guard text == "credential" else {
                report(keyPath, "'\(text)' is not supported; the one value is credential (present the route credential's clientCert upstream)", at: fields["clientCertificate"])
                return nil
            }
        }
        guard let name = credential else {
            report(keyPath, "needs the route's credential: it names whose certificate to present", at: fields["clientCertificate"])
            return nil
        }
        if let kind = kinds[name] {
            guard case .oauth2(let oauth) = kind, oauth.auth.usesClientCertificate else {
                report(keyPath, "'\(name)' does not authenticate with a client certificate; its tokens are bound to none (use auth: tls_client_auth or self_signed_tls_client_auth)", at: fields["clientCertificate"])
                return nil
            }
        }
        guard upstream?.isTLS == true else {
            report(keyPath, "a client certificate is presented over TLS: the upstream must be https://", at: fields["clientCertificate"])
            return nil
        }
        let own = tlsGiven.filter { $0 == "clientCert" || $0 == "clientKey" }
        guard own.isEmpty else {
            report(keyPath, "the route also sets \(own.joined(separator: " and ")); present either the credential's certificate or the route's own", at: fields["clientCertificate"])
            return nil
        }
        return true
    }

    /// `upgrades:` — protocols besides `websocket` a request may upgrade to: HTTP tokens, stored
    /// lowercase. `h2c` is refused: HTTP/2 is not relayed as an upgraded byte stream. Nil on a problem.
    private mutating func decodeUpgrades(_ node: Node?, path: String) -> [String]? {
        guard let node, !Self.isNull(node) else { return [] }
        guard case .sequence(let sequence) = node else {
            report(path, "expected a list of protocol names (e.g. [websocket]), got \(Self.describe(node))", at: node)
            return nil
        }
        var names: [String] = []
        var valid = true
        for (index, item) in sequence.enumerated() {
            let itemPath = "\(path)[\(index)]"
            guard case .value(let text) = string(item, path: itemPath) else { valid = false; continue }
            let name = text.lowercased()
            let token = !name.isEmpty && name.unicodeScalars.allSatisfy { scalar in
                (0x21...0x7E).contains(scalar.value) && !"\"(),/:;<=>?@[\\]{}".unicodeScalars.contains(scalar)
            }
            if !token {
                report(itemPath, "'\(text)' is not a protocol name (an HTTP token such as websocket; no version)", at: item)
                valid = false
            } else if name == "h2c" {
                report(itemPath, "h2c is never passed on: HTTP/2 cannot be relayed as an upgraded byte stream (the request is served as HTTP/1.1)", at: item)
                valid = false
            } else if !names.contains(name) {
                names.append(name)
            }
        }
        return valid ? names.filter { $0 != "websocket" } : nil
    }

    private static func unknownCredentialMessage(_ name: String, known: [String]) -> String {
        if name.isEmpty { return "is empty; expected the name of a credential under credentials" }
        if known.isEmpty { return "no credential named '\(name)': no credentials are defined" }
        let hint = Suggestions.closest(to: name, in: known).map { "; did you mean '\($0)'?" }
            ?? " (defined: \(known.joined(separator: ", ")))"
        return "no credential named '\(name)' under credentials\(hint)"
    }
}
