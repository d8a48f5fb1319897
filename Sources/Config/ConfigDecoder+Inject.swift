import Yams

extension ConfigDecoder {
    /// The outcome of decoding `routes[].inject`.
    struct DecodedPlacement {
        /// The placement; nil when absent or when it is the default (`Authorization: Bearer {token}`).
        var placement: CredentialPlacement?
        /// False when a problem was reported.
        var valid: Bool
    }

    /// Fields an `inject: {header: …}` may not name: the proxy writes or removes them itself
    /// (framing, routing, hop-by-hop, its own `Via` and DPoP proof).
    static let placementReservedFields: Set<String> = [
        "host", "content-length", "transfer-encoding", "connection", "keep-alive", "proxy-connection", "te", "trailer",
        "upgrade", "proxy-authorization", "proxy-authenticate", "via", "dpop", "expect",
    ]

    /// The marker a format, username or password puts where the token goes.
    static let tokenMarker = "{token}"

    /// Decodes `inject:` — exactly one of `{header: NAME, format: TEXT}`, `{query: NAME}`,
    /// `{basic: {username, password}}` or `{basic: pair}` — for a route with `credential`.
    mutating func decodePlacement(_ fields: [String: Node], path: String, credential: String?,
                                  kinds: [String: CredentialKind], clientAuthorization: ClientAuthorizationPolicy) -> DecodedPlacement {
        guard let node = fields["inject"], !Self.isNull(node) else {
            if let name = credential, case .aws? = kinds[name] {
                report(Self.join(path, "credential"), "'\(name)' is an aws credential, which signs requests: add inject: {sigv4: {allowedRegions: [...], allowedServices: [...]}}",
                       at: fields["credential"])
                return DecodedPlacement(placement: nil, valid: false)
            }
            return DecodedPlacement(placement: nil, valid: true)
        }
        let injectPath = Self.join(path, "inject")
        guard let entries = mapping(node, path: injectPath, expected: "a mapping with one of header, query or basic") else {
            return DecodedPlacement(placement: nil, valid: false)
        }
        checkKeys(entries, allowed: ConfigKeys.inject, path: injectPath)
        let inner = Self.index(entries)
        var valid = !entries.contains { !ConfigKeys.inject.contains($0.key) }
        let kindsGiven = ["header", "query", "basic", "sigv4"].filter { inner[$0] != nil }
        guard kindsGiven.count == 1, let kind = kindsGiven.first else {
            let found = kindsGiven.isEmpty ? "none is given" : "found \(kindsGiven.joined(separator: " and "))"
            report(injectPath, "needs exactly one of header, query, basic or sigv4; \(found)", at: node)
            return DecodedPlacement(placement: nil, valid: false)
        }
        if kind != "header", let format = inner["format"] {
            report(Self.join(injectPath, "format"), "only applies to inject: {header: …}", at: format)
            valid = false
        }
        if fields["credential"].map(Self.isNull) ?? true {
            report(injectPath, "only applies to a route with a credential (nothing is injected here)", at: node)
            valid = false
        } else if clientAuthorization != .replace {
            report(injectPath, "does not combine with clientAuthorization: \(clientAuthorization.rawValue) (the app's own Authorization or its exchange decides what goes)", at: node)
            valid = false
        } else if let name = credential, case .oauth2(let oauth)? = kinds[name], oauth.dpop != nil {
            report(injectPath, "'\(name)' makes DPoP-bound tokens, which go only as Authorization: DPoP with a proof; remove inject", at: node)
            valid = false
        }
        let isAWS: Bool = if let name = credential, case .aws? = kinds[name] { true } else { false }
        if (kind == "sigv4") != isAWS, credential != nil {
            report(injectPath, kind == "sigv4" ? "sigv4 signs with an aws credential; '\(credential ?? "")' is not one"
                                               : "an aws credential signs requests: use inject: {sigv4: {…}}", at: node)
            valid = false
        }
        var placement: CredentialPlacement?
        switch kind {
        case "sigv4":
            placement = decodeSigV4Placement(inner["sigv4"]!, path: Self.join(injectPath, "sigv4"))
            if case .sigv4(var settings)? = placement, let name = credential, case .aws(let aws)? = kinds[name] {
                settings.placeholderAccessKeyId = aws.placeholderAccessKeyId
                placement = .sigv4(settings)
            }
        case "header": placement = decodeHeaderPlacement(inner, path: injectPath)
        case "query": placement = decodeQueryPlacement(inner["query"], path: Self.join(injectPath, "query"))
        default: placement = decodeBasicPlacement(inner["basic"]!, path: Self.join(injectPath, "basic"))
        }
        if placement == nil { valid = false }
        // The default spelled out stays the default: the path every request takes knows no placement.
        if case .header(let name, "Bearer ", "")? = placement, name.lowercased() == "authorization" { placement = nil }
        return DecodedPlacement(placement: valid ? placement : nil, valid: valid)
    }

    /// `{header: NAME, format: TEXT}`; `format` defaults to `Bearer {token}` for Authorization
    /// and to `{token}` for any other field.
    private mutating func decodeHeaderPlacement(_ inner: [String: Node], path: String) -> CredentialPlacement? {
        let namePath = Self.join(path, "header")
        guard case .value(let name) = string(inner["header"], path: namePath) else {
            if inner["header"].map(Self.isNull) ?? false { report(namePath, "expected a field name, e.g. x-api-key", at: inner["header"]) }
            return nil
        }
        guard FieldNameSyntax.isToken(name) else {
            report(namePath, "'\(name)' is not an HTTP field name (letters, digits and \(FieldNameSyntax.punctuation)), e.g. x-api-key", at: inner["header"])
            return nil
        }
        guard !Self.placementReservedFields.contains(name.lowercased()) else {
            report(namePath, "\(name) is a field the proxy writes or removes itself; choose the field the API reads the key from", at: inner["header"])
            return nil
        }
        let formatPath = Self.join(path, "format")
        var format = name.lowercased() == "authorization" ? "Bearer {token}" : Self.tokenMarker
        switch string(inner["format"], path: formatPath) {
        case .absent: break
        case .invalid: return nil
        case .value(let text): format = text
        }
        let parts = format.components(separatedBy: Self.tokenMarker)
        guard parts.count == 2 else {
            report(formatPath, "must contain {token} exactly once, e.g. \"Bearer {token}\" or \"{token}\"", at: inner["format"])
            return nil
        }
        if let problem = Self.fieldTextProblem(format) {
            report(formatPath, problem, at: inner["format"])
            return nil
        }
        return .header(name: name, prefix: parts[0], suffix: parts[1])
    }

    /// `{sigv4: {allowedRegions: [...], allowedServices: [...], signUnsigned: false}}` (each optional).
    private mutating func decodeSigV4Placement(_ node: Node, path: String) -> CredentialPlacement? {
        if Self.isNull(node) { return .sigv4(SigV4RouteSettings()) }
        guard let entries = mapping(node, path: path, expected: "a mapping with allowedRegions, allowedServices, signUnsigned, maxHashedBody") else { return nil }
        checkKeys(entries, allowed: ConfigKeys.injectSigV4, path: path)
        let inner = Self.index(entries)
        var settings = SigV4RouteSettings()
        var valid = !entries.contains { !ConfigKeys.injectSigV4.contains($0.key) }
        for (key, keyPath) in [("allowedRegions", \SigV4RouteSettings.allowedRegions), ("allowedServices", \SigV4RouteSettings.allowedServices)] {
            guard let list = inner[key], !Self.isNull(list) else { continue }
            guard case .sequence(let items) = list else {
                report(Self.join(path, key), "expected a list, e.g. [us-east-1]", at: list)
                valid = false
                continue
            }
            for (index, item) in items.enumerated() {
                guard case .value(let text) = string(item, path: "\(Self.join(path, key))[\(index)]") else { valid = false; continue }
                guard !text.isEmpty, text.unicodeScalars.allSatisfy({ $0.isASCII && ($0.properties.isLowercase || ("0"..."9").contains($0) || $0 == "-") }) else {
                    report("\(Self.join(path, key))[\(index)]", "'\(text)' is not a region or service name (lowercase letters, digits, '-')", at: item)
                    valid = false
                    continue
                }
                settings[keyPath: keyPath].append(text)
            }
        }
        switch bool(inner["signUnsigned"], path: Self.join(path, "signUnsigned")) {
        case .absent: break
        case .invalid: valid = false
        case .value(let value): settings.signUnsigned = value
        }
        switch string(inner["maxHashedBody"], path: Self.join(path, "maxHashedBody")) {
        case .absent: break
        case .invalid: valid = false
        case .value(let text):
            // At most 16 MiB: each such body is held in memory whole until it is sent.
            if let bytes = ByteSize.parse(text), bytes >= 1, bytes <= 16 << 20 {
                settings.maxHashedBody = bytes
            } else {
                report(Self.join(path, "maxHashedBody"), "expected a size from 1 to 16MiB such as 8MiB, got '\(text)'", at: inner["maxHashedBody"])
                valid = false
            }
        }
        return valid ? .sigv4(settings) : nil
    }

    /// `{query: NAME}`: a parameter name of unreserved characters.
    private mutating func decodeQueryPlacement(_ node: Node?, path: String) -> CredentialPlacement? {
        guard case .value(let name) = string(node, path: path) else {
            if node.map(Self.isNull) ?? false { report(path, "expected a query parameter name, e.g. key", at: node) }
            return nil
        }
        guard !name.isEmpty, name.utf8.allSatisfy(PlaceholderSetting.isPlaceholderByte) else {
            report(path, "'\(name)' must be a query parameter name of letters, digits and '-', '.', '_', '~', e.g. key", at: node)
            return nil
        }
        return .query(name: name)
    }

    /// `basic: pair` (the token is `user:secret`) or `basic: {username, password}` with the
    /// token (`{token}`) as exactly one of them and the other given as text.
    private mutating func decodeBasicPlacement(_ node: Node, path: String) -> CredentialPlacement? {
        if case .scalar = node {
            guard case .value(let text) = string(node, path: path) else { return nil }
            guard text == "pair" else {
                report(path, "expected pair (the token is user:secret) or {username: …, password: …} with {token} as one of them", at: node)
                return nil
            }
            return .basic(.pair)
        }
        guard let entries = mapping(node, path: path, expected: "pair or a mapping with username and password") else { return nil }
        checkKeys(entries, allowed: ConfigKeys.injectBasic, path: path)
        guard !entries.contains(where: { !ConfigKeys.injectBasic.contains($0.key) }) else { return nil }
        let inner = Self.index(entries)
        var values: [String: String] = [:]
        for key in ConfigKeys.injectBasic {
            switch string(inner[key], path: Self.join(path, key), nullIsAbsent: false) {
            case .absent:
                report(Self.join(path, key), "required key is missing (\"\" for none)", at: node)
                return nil
            case .invalid: return nil
            case .value(let text): values[key] = text
            }
        }
        let username = values["username"]!, password = values["password"]!
        switch (username == Self.tokenMarker, password == Self.tokenMarker) {
        case (true, false) where !password.contains(Self.tokenMarker):
            if let problem = Self.fieldTextProblem(password) { report(Self.join(path, "password"), problem, at: inner["password"]); return nil }
            return .basic(.tokenAsUsername(password: password))
        case (false, true) where !username.contains(Self.tokenMarker):
            if let problem = Self.fieldTextProblem(username) { report(Self.join(path, "username"), problem, at: inner["username"]); return nil }
            guard !username.contains(":") else {
                report(Self.join(path, "username"), "must not contain ':' (RFC 7617 §2: the first ':' ends the user)", at: inner["username"])
                return nil
            }
            return .basic(.tokenAsPassword(username: username))
        default:
            report(path, "exactly one of username and password is \"{token}\" (the other is fixed text, \"\" for none)", at: node)
            return nil
        }
    }

    /// Why `text` cannot be part of a field value (a control character would end the line,
    /// surrounding whitespace is not part of a value), or nil.
    static func fieldTextProblem(_ text: String) -> String? {
        if text.unicodeScalars.contains(where: { ($0.value < 0x20 && $0 != "\t") || $0.value == 0x7F }) {
            return "must not contain CR, LF, NUL or other control characters"
        }
        if text.first?.isWhitespace == true || text.last?.isWhitespace == true {
            return "must not start or end with whitespace (a field value does not keep it)"
        }
        return nil
    }
}
