import Yams

extension ConfigDecoder {
    /// The TLS keys of a token server or upstream: the settings (nil when
    /// any is invalid) and the keys actually given, for the https check.
    mutating func decodeTLSSettings(_ fields: [String: Node], path: String) -> (settings: TLSSettings?, given: [String]) {
        let given = ConfigKeys.tls.filter { key in fields[key].map { !Self.isNull($0) } ?? false }
        guard !given.isEmpty else { return (.default, []) }
        var settings = TLSSettings.default
        var valid = true
        let files: [(key: String, kind: PEMFile.Kind, keyPath: WritableKeyPath<TLSSettings, String?>)] = [
            ("caFile", .caBundle, \.caFile), ("clientCert", .certificate, \.clientCert), ("clientKey", .privateKey, \.clientKey),
        ]
        for file in files {
            switch pemFile(fields[file.key], path: Self.join(path, file.key), kind: file.kind) {
            case .absent: break
            case .invalid: valid = false
            case .value(let resolved): settings[keyPath: file.keyPath] = resolved
            }
        }
        for (key, other) in [("clientCert", "clientKey"), ("clientKey", "clientCert")] where given.contains(key) && !given.contains(other) {
            report(Self.join(path, key), "\(key) needs \(other) as well (a client certificate and its key go together)", at: fields[key])
            valid = false
        }
        switch bool(fields["insecureSkipVerify"], path: Self.join(path, "insecureSkipVerify")) {
        case .absent: break
        case .invalid: valid = false
        case .value(let value): settings.insecureSkipVerify = value
        }
        return (valid ? settings : nil, given)
    }

    /// Reports each given TLS key when the URL they apply to is not https.
    mutating func rejectTLSKeys(_ given: [String], fields: [String: Node], path: String, reason: String) {
        for key in given {
            report(Self.join(path, key), "TLS settings need an https:// URL (\(reason))", at: fields[key])
        }
    }

    /// A PEM file path, resolved against the config directory and checked now.
    mutating func pemFile(_ node: Node?, path: String, kind: PEMFile.Kind) -> Field<String> {
        switch string(node, path: path) {
        case .absent: return .absent
        case .invalid: return .invalid
        case .value(let text):
            if text.isEmpty {
                report(path, "is empty; expected the path of a PEM file", at: node)
                return .invalid
            }
            let resolved = resolve(path: text)
            if let problem = PEMFile.check(resolved, kind: kind) {
                report(path, problem.message, at: node)
                return .invalid
            }
            return .value(resolved)
        }
    }
}
