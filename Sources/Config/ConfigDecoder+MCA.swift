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
        case .value(let url): draft.set(serverUrl: url, origin: .file)
        }

        let tenantKeys = ["tenantId", "appId"].filter { key in fields[key].map { !Self.isNull($0) } ?? false }
        if tenantKeys.count > 1 {
            report(Self.join(path, "appId"), "appId is an alias of tenantId; give only one of them", at: fields["appId"])
            valid = false
        } else if let key = tenantKeys.first {
            if case .value(let id) = plainText(fields[key], path: Self.join(path, key)) {
                draft.set(tenantId: id, origin: .file)
            } else {
                valid = false
            }
        } else {
            draft.missing.append("tenantId")
        }

        switch plainText(fields["clientId"], path: Self.join(path, "clientId")) {
        case .absent: draft.missing.append("clientId")
        case .invalid: valid = false
        case .value(let id): draft.set(clientId: id, origin: .file)
        }

        let secretKeys = ConfigKeys.secret.filter { fields[$0] != nil }
        if secretKeys.count > 1 {
            report(path, "an mca credential takes at most one of secret, secretFile or secretEnv (or none, to use VCAP_SERVICES); "
                + "found \(secretKeys.joined(separator: " and "))", line: fields[secretKeys[1]]?.mark?.line)
            valid = false
        } else if let key = secretKeys.first, let valueNode = fields[key] {
            if let source = readSecret(valueNode, key: key, path: path, keys: .secret) {
                if case .env(let name) = source {
                    draft.set(secret: source, origin: .environment(name))
                } else {
                    draft.set(secret: source, origin: .file)
                }
            } else {
                valid = false
            }
        } else {
            draft.missing.append("secret")
        }

        let fetch = decodeFetchSettings(fields, path: path)
        let tls = decodeTLSSettings(fields, path: path)
        if !draft.missing.isEmpty, !discoverMCA(&draft, path: path, node: node) {
            valid = false
        }
        if let serverUrl = draft.serverUrl, !serverUrl.isTLS, !tls.given.isEmpty {
            rejectTLSKeys(tls.given, fields: fields, path: path, reason: "serverUrl is \(serverUrl)")
            valid = false
        }
        guard valid, let serverUrl = draft.serverUrl, let tenantId = draft.tenantId, let clientId = draft.clientId,
              let secret = draft.secret, let fetch, let tlsSettings = tls.settings
        else { return nil }
        return MCAConfig(
            serverUrl: serverUrl, tenantId: tenantId, clientId: clientId, secret: secret,
            fetch: fetch, tls: tlsSettings, origins: draft.origins)
    }
}
