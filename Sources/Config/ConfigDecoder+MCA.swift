import Yams

extension ConfigDecoder {
    /// `type: mca`. Each of serverUrl, tenantId (alias appId), clientId and
    /// secret comes from the file when given there, otherwise from Cloud
    /// Foundry's environment (see `discoverMCA`).
    mutating func decodeMCA(_ fields: [String: Node], path: String, node: Node) -> MCAConfig? {
        var draft = MCADraft()
        var valid = true

        switch endpoint(fields["serverUrl"], path: Self.join(path, "serverUrl")) {
        case .absent: draft.missing.append("serverUrl")
        case .invalid: valid = false
        case .value(let url): draft.set(\.serverUrl, url, origin: .file)
        }

        let tenantKeys = ["tenantId", "appId"].filter { key in fields[key].map { !Self.isNull($0) } ?? false }
        if tenantKeys.count > 1 {
            report(Self.join(path, "appId"), "appId is an alias of tenantId; give only one of them", at: fields["appId"])
            valid = false
        } else if let key = tenantKeys.first {
            if case .value(let id) = plainText(fields[key], path: Self.join(path, key)) {
                draft.set(\.tenantId, id, origin: .file)
            } else {
                valid = false
            }
        } else {
            draft.missing.append("tenantId")
        }

        var auth = MCAAuthMethod.secret
        var authInvalid = false
        switch choice(fields["auth"], path: Self.join(path, "auth"), as: MCAAuthMethod.self) {
        case .absent: break
        case .invalid: authInvalid = true
        case .value(let method): auth = method
        }
        // Which keys are required depends on auth: with an unknown method, report only that.
        if authInvalid { return nil }

        switch plainText(fields["clientId"], path: Self.join(path, "clientId")) {
        case .absent:
            // With a certificate the client id defaults to its subject CN (read at start-up).
            if auth == .certificate { draft.origins["clientId"] = .certificateSubject } else { draft.missing.append("clientId") }
        case .invalid: valid = false
        case .value(let id): draft.set(\.clientId, id, origin: .file)
        }

        var certificate: ClientCertificateFiles?
        let secretKeys = ConfigKeys.secret.filter { fields[$0] != nil }
        if auth == .certificate {
            for key in secretKeys {
                report(Self.join(path, key), "auth: certificate uses no client secret; remove \(key)", at: fields[key])
                valid = false
            }
            var files: [String: String] = [:]
            for (key, kind) in [("clientCert", PEMFile.Kind.certificate), ("clientKey", PEMFile.Kind.privateKey)] {
                switch pemFile(fields[key], path: Self.join(path, key), kind: kind) {
                case .absent:
                    report(Self.join(path, key), "required key is missing: auth: certificate signs its IMFCert assertion with clientCert and its RSA clientKey", at: node)
                    valid = false
                case .invalid: valid = false
                case .value(let file): files[key] = file
                }
            }
            if let cert = files["clientCert"], let key = files["clientKey"] {
                certificate = ClientCertificateFiles(certificate: cert, key: key)
            }
        } else if secretKeys.count > 1 {
            report(path, "an mca credential takes at most one of secret, secretFile or secretEnv (or none, to use VCAP_SERVICES); "
                + "found \(secretKeys.joined(separator: " and "))", line: fields[secretKeys[1]]?.mark?.line)
            valid = false
        } else if let key = secretKeys.first, let valueNode = fields[key] {
            if let source = readSecret(valueNode, key: key, path: path, keys: .secret) {
                if case .env(let name) = source {
                    draft.set(\.secret, source, origin: .environment(name))
                } else {
                    draft.set(\.secret, source, origin: .file)
                }
            } else {
                valid = false
            }
        } else {
            draft.missing.append("secret")
        }

        let fetch = decodeFetchSettings(fields, path: path)
        // With auth: certificate, clientCert and clientKey sign the assertion; they are not TLS keys.
        var tlsFields = fields
        if auth == .certificate {
            tlsFields["clientCert"] = nil
            tlsFields["clientKey"] = nil
        }
        let tls = decodeTLSSettings(tlsFields, path: path)
        if !draft.missing.isEmpty, !discoverMCA(&draft, path: path, node: node) {
            valid = false
        }
        if let serverUrl = draft.serverUrl, !serverUrl.isTLS, !tls.given.isEmpty {
            rejectTLSKeys(tls.given, fields: fields, path: path, reason: "serverUrl is \(serverUrl)")
            valid = false
        }
        guard valid, let serverUrl = draft.serverUrl, let tenantId = draft.tenantId, let fetch, let tlsSettings = tls.settings,
              auth == .certificate ? certificate != nil : (draft.clientId != nil && draft.secret != nil)
        else { return nil }
        return MCAConfig(
            serverUrl: serverUrl, tenantId: tenantId, clientId: draft.clientId, secret: draft.secret, auth: auth,
            certificate: certificate, fetch: fetch, tls: tlsSettings, origins: draft.origins)
    }
}
