import Foundation
import Yams

extension ConfigDecoder {
    /// Decodes `credentials:`. Returns the valid credentials and the names of
    /// all declared ones (valid or not), so routes naming a broken credential
    /// don't get a second, misleading "no such credential" problem.
    mutating func decodeCredentials(_ node: Node?) -> (configs: [CredentialConfig], names: [String]) {
        guard let node, !Self.isNull(node) else { return ([], []) }
        guard let entries = mapping(node, path: "credentials", expected: "a mapping from credential names to settings") else {
            return ([], [])
        }
        var configs: [CredentialConfig] = []
        var names: [String] = []
        for entry in entries {
            let path = "credentials.\(entry.key)"
            names.append(entry.key)
            if !Self.isValidCredentialName(entry.key) {
                report(path, "credential names may contain only letters, digits, '-' and '_'", line: entry.line)
            }
            if let kind = decodeCredential(entry.value, path: path) {
                let placeholder = decodePlaceholder(entry.value, path: path, kind: kind)
                var limitsNode: Node?
                if case .mapping(let mapping) = entry.value {
                    limitsNode = mapping.first { if case .scalar(let key) = $0.key { key.string == "limits" } else { false } }?.value
                }
                let limits = decodeLimits(limitsNode, path: Self.join(path, "limits"))
                if placeholder.valid && limits.valid {
                    configs.append(CredentialConfig(name: entry.key, kind: kind, placeholder: placeholder.setting, limits: limits.limits))
                }
            }
        }
        var owners: [PlaceholderSetting: String] = [:]
        for config in configs {
            guard let placeholder = config.placeholder else { continue }
            if let owner = owners[placeholder] {
                let key = if case .file = placeholder { "placeholderFile" } else { "placeholder" }
                report("credentials.\(config.name).\(key)", "is the same as credentials.\(owner)'s: each credential needs its own placeholder", line: nil)
            } else {
                owners[placeholder] = config.name
            }
        }
        return (configs, names)
    }

    /// `placeholder: TEXT` or `placeholderFile: PATH` (not both), for any credential type but
    /// one making DPoP-bound tokens (they go only with a proof, as `Authorization: DPoP`).
    private mutating func decodePlaceholder(_ node: Node, path: String, kind: CredentialKind)
        -> (setting: PlaceholderSetting?, valid: Bool) {
        guard case .mapping(let mapping) = node else { return (nil, true) }
        var fields: [String: Node] = [:]
        for (key, value) in mapping { if case .scalar(let scalar) = key { fields[scalar.string] = value } }
        let given = ["placeholder", "placeholderFile"].filter { fields[$0].map { !Self.isNull($0) } ?? false }
        guard let key = given.first, let valueNode = fields[key] else { return (nil, true) }
        if given.count > 1 {
            report(path, "give one of placeholder and placeholderFile, not both", at: fields["placeholderFile"])
            return (nil, false)
        }
        if case .oauth2(let oauth) = kind, oauth.dpop != nil {
            report(Self.join(path, key), "a DPoP-bound token goes only as Authorization: DPoP with a proof, never in place of a placeholder", at: valueNode)
            return (nil, false)
        }
        guard case .value(let text) = string(valueNode, path: Self.join(path, key)) else { return (nil, false) }
        if key == "placeholderFile" {
            guard !text.isEmpty else {
                report(Self.join(path, key), "is empty; expected the path of the file the placeholder is read from or written to", at: valueNode)
                return (nil, false)
            }
            return (.file(resolve(path: text)), true)
        }
        if let problem = PlaceholderSetting.problem(text) {
            // The value is not shown: an operator may have pasted the real key here by mistake.
            report(Self.join(path, key), problem, at: valueNode)
            return (nil, false)
        }
        return (.value(text), true)
    }

    /// Names appear in key paths (`credentials.NAME.token`), so dots and
    /// brackets would make those ambiguous.
    static func isValidCredentialName(_ name: String) -> Bool {
        !name.isEmpty && name.unicodeScalars.allSatisfy {
            $0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0) || $0 == "-" || $0 == "_")
        }
    }

    private mutating func decodeCredential(_ node: Node, path: String) -> CredentialKind? {
        guard let entries = mapping(node, path: path, expected: "a mapping with at least 'type'") else { return nil }
        let fields = Self.index(entries)
        // With no usable type we can't know which keys belong, so check
        // against every key any type accepts to still catch typos.
        let allKeys = ConfigKeys.anyCredential
        let supported = ConfigKeys.credentialTypes.joined(separator: ", ")
        switch string(fields["type"], path: Self.join(path, "type")) {
        case .absent:
            report(Self.join(path, "type"), "required key is missing (supported types: \(supported))", at: node)
            checkKeys(entries, allowed: allKeys, path: path)
            return nil
        case .invalid:
            checkKeys(entries, allowed: allKeys, path: path)
            return nil
        case .value("static"):
            checkKeys(rejectGrantKeys(entries, type: "static", path: path), allowed: ConfigKeys.credentialCommon + ConfigKeys.staticToken, path: path)
            return decodeStaticToken(fields, path: path, node: node).map(CredentialKind.staticToken)
        case .value("mca"):
            checkKeys(rejectGrantKeys(entries, type: "mca", path: path), allowed: ConfigKeys.credentialCommon + ConfigKeys.mca, path: path)
            return decodeMCA(fields, path: path, node: node).map(CredentialKind.mca)
        case .value("oauth2"):
            checkKeys(entries, allowed: ConfigKeys.credentialCommon + ConfigKeys.oauth2, path: path)
            return decodeOAuth2(fields, path: path, node: node).map(CredentialKind.oauth2)
        case .value("aws"):
            checkKeys(rejectGrantKeys(entries, type: "aws", path: path), allowed: ConfigKeys.credentialCommon + ConfigKeys.aws, path: path)
            return decodeAWS(fields, path: path, node: node).map(CredentialKind.aws)
        case .value("google_service_account"):
            checkKeys(rejectGrantKeys(entries, type: "google_service_account", path: path),
                      allowed: ConfigKeys.credentialCommon + ConfigKeys.googleServiceAccount, path: path)
            return decodeGoogleServiceAccount(fields, path: path, node: node).map(CredentialKind.googleServiceAccount)
        case .value(let other):
            let hint = Suggestions.closest(to: other, in: ConfigKeys.credentialTypes).map { " (did you mean '\($0)'?)" }
                ?? " (supported types: \(supported))"
            report(Self.join(path, "type"), "unknown credential type '\(other)'\(hint)", at: fields["type"])
            checkKeys(entries, allowed: allKeys, path: path)
            return nil
        }
    }

    /// `type: static` with exactly one of `token`, `tokenFile`, `tokenEnv`.
    /// The secret is read now so a missing file or variable fails at load,
    /// not on the first request; only the source is kept.
    private mutating func decodeStaticToken(_ fields: [String: Node], path: String, node: Node) -> StaticTokenConfig? {
        let given = ConfigKeys.staticToken.filter { fields[$0] != nil }
        guard given.count == 1, let key = given.first, let valueNode = fields[key] else {
            let found = given.isEmpty ? "none is given" : "found \(given.joined(separator: " and "))"
            let line = given.count > 1 ? fields[given[1]]?.mark?.line : node.mark?.line
            report(path, "a static credential needs exactly one of token, tokenFile or tokenEnv; \(found)", line: line)
            return nil
        }
        return readSecret(valueNode, key: key, path: path, keys: .token).map(StaticTokenConfig.init(source:))
    }
}
