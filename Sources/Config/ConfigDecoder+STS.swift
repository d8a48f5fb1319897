import Yams

extension ConfigDecoder {
    /// `routes[].exchange` of a route with `clientAuthorization: exchange` (every key optional).
    mutating func decodeSTS(_ node: Node?, path: String) -> STSSettings? {
        var settings = STSSettings()
        guard let node, !Self.isNull(node) else { return settings }
        guard let entries = mapping(node, path: path, expected: "a mapping (audience, scope, resource, requestedTokenType, subjectTokenType, actorTokenFile, actorTokenType)") else {
            return nil
        }
        checkKeys(entries, allowed: ConfigKeys.exchange, path: path)
        let fields = Self.index(entries)
        var valid = true
        for (key, keyPath) in [("audience", \STSSettings.audience), ("scope", \STSSettings.scope),
                               ("resource", \STSSettings.resource)] {
            switch optionalParameter(fields[key], path: Self.join(path, key), name: key) {
            case .absent: break
            case .invalid: valid = false
            case .value(let text): settings[keyPath: keyPath] = text
            }
        }
        for (key, keyPath) in [("requestedTokenType", \STSSettings.requestedTokenType)] {
            switch tokenTypeURI(fields[key], path: Self.join(path, key)) {
            case .absent: break
            case .invalid: valid = false
            case .value(let uri): settings[keyPath: keyPath] = uri
            }
        }
        for (key, keyPath) in [("subjectTokenType", \STSSettings.subjectTokenType), ("actorTokenType", \STSSettings.actorTokenType)] {
            switch tokenTypeURI(fields[key], path: Self.join(path, key)) {
            case .absent: break
            case .invalid: valid = false
            case .value(let uri): settings[keyPath: keyPath] = uri
            }
        }
        let filePath = Self.join(path, "actorTokenFile")
        switch string(fields["actorTokenFile"], path: filePath) {
        case .absent: break
        case .invalid: valid = false
        case .value(let text):
            if text.isEmpty {
                report(filePath, "is empty; expected the path of a file holding the actor token", at: fields["actorTokenFile"])
                valid = false
            } else {
                settings.actorTokenFile = resolve(path: text)  // may appear after start, like assertionFile
            }
        }
        if fields["actorTokenType"] != nil, settings.actorTokenFile == nil, valid {
            report(Self.join(path, "actorTokenType"), "is only used with actorTokenFile", at: fields["actorTokenType"])
            valid = false
        }
        return valid ? settings : nil
    }

    /// `scopeHeader`/`allowedScopes` and `audienceHeader`/`allowedAudiences` of a route: nil when
    /// none is given (`valid` false on a problem).
    mutating func decodeRequested(_ fields: [String: Node], path: String) -> (settings: RequestedTokenSettings?, valid: Bool) {
        var settings = RequestedTokenSettings()
        var valid = true
        var given = false
        for (headerKey, listKey, what) in [("scopeHeader", "allowedScopes", "scope"), ("audienceHeader", "allowedAudiences", "audience")] {
            let header = headerName(fields[headerKey], path: Self.join(path, headerKey))
            let list = valueList(fields[listKey], path: Self.join(path, listKey), what: what)
            if case .invalid = header { valid = false }
            if case .invalid = list { valid = false }
            switch (header, list) {
            case (.value(let name), .value(let values)):
                given = true
                if what == "scope" {
                    settings.scopeHeader = name
                    settings.allowedScopes = values
                } else {
                    settings.audienceHeader = name
                    settings.allowedAudiences = values
                }
            case (.value, .absent):
                report(Self.join(path, listKey), "required with \(headerKey): the \(what)s a request may ask for (nothing else is ever requested)", at: fields[headerKey])
                valid = false
            case (.absent, .value):
                report(Self.join(path, headerKey), "required with \(listKey): the request field that names the \(what) (e.g. Token-Sidecar-\(what.capitalized))", at: fields[listKey])
                valid = false
            default:
                break
            }
        }
        if let scope = settings.scopeHeader, let audience = settings.audienceHeader, scope.lowercased() == audience.lowercased() {
            report(Self.join(path, "audienceHeader"), "names the same field as scopeHeader", at: fields["audienceHeader"])
            valid = false
        }
        return (given ? settings : nil, valid)
    }

    /// Fields a route must never consume: framing, routing, hop-by-hop, credentials.
    private static let reservedFieldNames: Set<String> = [
        "authorization", "proxy-authorization", "proxy-authenticate", "host", "connection", "keep-alive", "proxy-connection",
        "te", "trailer", "transfer-encoding", "upgrade", "content-length", "expect", "via", "dpop",
    ]

    /// An HTTP field name (RFC 9110 §5.1 token) that is not one the proxy handles itself.
    private mutating func headerName(_ node: Node?, path: String) -> Field<String> {
        switch string(node, path: path) {
        case .absent: return .absent
        case .invalid: return .invalid
        case .value(let name):
            guard FieldNameSyntax.isToken(name) else {
                report(path, "'\(name)' is not an HTTP field name (letters, digits and !#$%&'*+-.^_`|~), e.g. Token-Sidecar-Scope", at: node)
                return .invalid
            }
            guard !Self.reservedFieldNames.contains(name.lowercased()) else {
                report(path, "\(name) is a field the proxy handles itself; choose another name, e.g. Token-Sidecar-Scope", at: node)
                return .invalid
            }
            return .value(name)
        }
    }

    /// A non-empty list of distinct values without whitespace: scope-tokens (RFC 6749 §3.3:
    /// printable ASCII but space, `"` and `\`) for scopes, at most 64; any visible text for audiences.
    private mutating func valueList(_ node: Node?, path: String, what: String) -> Field<[String]> {
        guard let node, !Self.isNull(node) else { return .absent }
        guard case .sequence(let sequence) = node else {
            report(path, "expected a list of \(what)s, got \(Self.describe(node))", at: node)
            return .invalid
        }
        var values: [String] = []
        var valid = true
        for (index, item) in sequence.enumerated() {
            let itemPath = "\(path)[\(index)]"
            guard case .value(let text) = string(item, path: itemPath) else { valid = false; continue }
            let scopeToken = text.unicodeScalars.allSatisfy { $0.value == 0x21 || (0x23...0x5B).contains($0.value) || (0x5D...0x7E).contains($0.value) }
            let visible = text.unicodeScalars.allSatisfy { $0.value > 0x20 && $0.value < 0x7F }
            if text.isEmpty || !(what == "scope" ? scopeToken : visible) {
                let rule = what == "scope" ? "a scope is printable ASCII without spaces, quotes or backslashes (RFC 6749 §3.3)" : "an audience is printable ASCII without spaces"
                report(itemPath, "'\(text)' is not a valid \(what): \(rule)", at: item)
                valid = false
            } else if values.contains(text) {
                report(itemPath, "'\(text)' is listed twice", at: item)
                valid = false
            } else {
                values.append(text)
            }
        }
        if sequence.isEmpty {
            report(path, "is empty; list the \(what)s a request may ask for", at: node)
            valid = false
        }
        if what == "scope", values.count > 64 {
            report(path, "lists \(values.count) scopes; at most 64 are allowed", at: node)
            valid = false
        }
        return valid ? .value(values) : .invalid
    }
}
