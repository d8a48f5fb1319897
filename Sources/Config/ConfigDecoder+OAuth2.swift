import Yams

extension ConfigDecoder {
    /// `type: oauth2`: tokenUrl, clientId and exactly one secret source are
    /// required; the rest are optional.
    mutating func decodeOAuth2(_ fields: [String: Node], path: String, node: Node) -> OAuth2Config? {
        var valid = true

        var tokenUrl: EndpointURL?
        let urlPath = Self.join(path, "tokenUrl")
        switch endpoint(fields["tokenUrl"], path: urlPath, queryHint: " (put extra form parameters under params)") {
        case .absent:
            report(urlPath, "required key is missing (e.g. tokenUrl: https://idp.example.com/oauth/token)", at: node)
            valid = false
        case .invalid: valid = false
        case .value(let url): tokenUrl = url
        }

        var auth = ClientAuthMethod.basic
        switch choice(fields["auth"], path: Self.join(path, "auth"), as: ClientAuthMethod.self) {
        case .absent: break
        case .invalid: valid = false
        case .value(let method): auth = method
        }

        var clientId: String?
        switch plainText(fields["clientId"], path: Self.join(path, "clientId")) {
        case .absent:
            if auth == .none {
                clientId = ""  // a public client need not name itself
            } else {
                report(Self.join(path, "clientId"), "required key is missing", at: node)
                valid = false
            }
        case .invalid: valid = false
        case .value(let id): clientId = id
        }

        let grant = decodeGrant(fields, path: path, node: node)
        if grant == nil { valid = false }

        var secret: SecretSource?
        let secretKeys = ConfigKeys.secret.filter { fields[$0] != nil }
        if !auth.needsSecret {
            for key in secretKeys {
                report(Self.join(path, key), "auth: \(auth.rawValue) uses no client secret; remove \(key)", at: fields[key])
                valid = false
            }
        } else if secretKeys.count == 1, let key = secretKeys.first, let valueNode = fields[key] {
            secret = readSecret(valueNode, key: key, path: path, keys: .secret)
            if secret == nil { valid = false }
        } else {
            let found = secretKeys.isEmpty ? "none is given" : "found \(secretKeys.joined(separator: " and "))"
            let line = secretKeys.count > 1 ? fields[secretKeys[1]]?.mark?.line : node.mark?.line
            report(path, "an oauth2 credential with auth: \(auth.rawValue) needs exactly one of secret, secretFile or secretEnv; \(found)", line: line)
            valid = false
        }
        var assertion: JWTAssertionSettings?
        switch decodeAssertionSettings(fields, path: path, auth: auth, grantSigns: grant?.signsAssertion ?? false, node: node) {
        case .absent: break
        case .invalid: valid = false
        case .value(let settings): assertion = settings
        }
        var assertionFile: String?
        switch decodeAssertionFile(fields, path: path, auth: auth, node: node) {
        case .absent: break
        case .invalid: valid = false
        case .value(let file): assertionFile = file
        }

        var optional: [String: String] = [:]
        for key in ["scope", "audience", "resource"] {
            switch optionalParameter(fields[key], path: Self.join(path, key), name: key) {
            case .absent: break
            case .invalid: valid = false
            case .value(let text): optional[key] = text
            }
        }

        let params = decodeFormParameters(fields["params"], path: Self.join(path, "params"))
        if params == nil { valid = false }
        let fetch = decodeFetchSettings(fields, path: path)
        let tls = decodeTLSSettings(fields, path: path)
        if let tokenUrl, !tokenUrl.isTLS, !tls.given.isEmpty {
            rejectTLSKeys(tls.given, fields: fields, path: path, reason: "tokenUrl is \(tokenUrl)")
            valid = false
        }
        if auth.usesClientCertificate {
            if let tokenUrl, !tokenUrl.isTLS {
                report(Self.join(path, "auth"), "\(auth.rawValue) authenticates with the TLS client certificate, so it needs an https:// tokenUrl (tokenUrl is \(tokenUrl))", at: fields["auth"])
                valid = false
            }
            if !tls.given.contains("clientCert") && !tls.given.contains("clientKey") {
                report(path, "auth: \(auth.rawValue) needs clientCert and clientKey: the certificate and key the TLS handshake presents", at: node)
                valid = false
            }
        }
        var dpop: DPoPSettings?
        switch decodeDPoP(fields["dpop"], path: Self.join(path, "dpop")) {
        case .absent: break
        case .invalid: valid = false
        case .value(let settings): dpop = settings
        }
        guard valid, let tokenUrl, let clientId, let params, let fetch, let tlsSettings = tls.settings, let grant,
              auth.needsSecret == (secret != nil) else { return nil }
        return OAuth2Config(
            tokenUrl: tokenUrl, clientId: clientId, secret: secret, auth: auth, assertion: assertion, assertionFile: assertionFile,
            scope: optional["scope"], audience: optional["audience"], resource: optional["resource"],
            params: params, fetch: fetch, tls: tlsSettings, grant: grant, dpop: dpop)
    }

    /// `dpop`: `true` (a generated key), `false`/absent (bearer tokens), or `{keyFile: PATH}`.
    /// `false` is `.absent`; the file is checked when the credential is built.
    private mutating func decodeDPoP(_ node: Node?, path: String) -> Field<DPoPSettings> {
        guard let node, !Self.isNull(node) else { return .absent }
        if case .scalar = node {
            switch bool(node, path: path) {
            case .absent: return .absent
            case .invalid: return .invalid
            case .value(let on): return on ? .value(.generated) : .absent
            }
        }
        guard let entries = mapping(node, path: path, expected: "true, false, or a mapping with keyFile (a PEM EC P-256 or RSA key)") else {
            return .invalid
        }
        checkKeys(entries, allowed: ConfigKeys.dpop, path: path)
        let fields = Self.index(entries)
        let filePath = Self.join(path, "keyFile")
        switch string(fields["keyFile"], path: filePath) {
        case .absent:
            report(filePath, "required key is missing (or write dpop: true for a key generated in memory)", at: node)
            return .invalid
        case .invalid:
            return .invalid
        case .value(let text):
            guard !text.isEmpty else {
                report(filePath, "is empty; expected the path of a PEM private key (EC P-256 or RSA)", at: fields["keyFile"])
                return .invalid
            }
            return .value(.keyFile(resolve(path: text)))
        }
    }

    /// `grant` (`client_credentials`, the default, or `token_exchange`) with `subjectTokenFile`
    /// (required for, and only used by, `token_exchange`; it need not exist yet) and
    /// `subjectTokenType` (default: the JWT URN).
    private mutating func decodeGrant(_ fields: [String: Node], path: String, node: Node) -> OAuth2Grant? {
        let grantPath = Self.join(path, "grant")
        var exchange = false
        var jwtBearer = false
        var refresh = false
        let grants = ["client_credentials", "token_exchange", "jwt_bearer", "refresh_token"]
        switch string(fields["grant"], path: grantPath) {
        case .absent: break
        case .invalid: return nil
        case .value("client_credentials"): break
        case .value("token_exchange"): exchange = true
        case .value("jwt_bearer"): jwtBearer = true
        case .value("refresh_token"): refresh = true
        case .value(let other):
            let hint = Suggestions.closest(to: other, in: grants).map { " (did you mean '\($0)'?)" } ?? ""
            report(grantPath, "'\(other)' is not one of \(grants.joined(separator: ", "))\(hint)", at: fields["grant"])
            return nil
        }
        let refreshPath = Self.join(path, "refreshTokenFile")
        var refreshFile: String?
        switch string(fields["refreshTokenFile"], path: refreshPath) {
        case .absent:
            if refresh {
                report(refreshPath, "required key is missing: grant: refresh_token reads the refresh token from this file and writes each rotated one back", at: node)
                return nil
            }
        case .invalid: return nil
        case .value(let text):
            guard refresh else {
                report(refreshPath, "is only used with grant: refresh_token", at: fields["refreshTokenFile"])
                return nil
            }
            guard !text.isEmpty else {
                report(refreshPath, "is empty; expected the path of the file holding the refresh token", at: fields["refreshTokenFile"])
                return nil
            }
            refreshFile = resolve(path: text)
        }
        let subjectPath = Self.join(path, "assertionSubject")
        var subject: String?
        switch plainText(fields["assertionSubject"], path: subjectPath) {
        case .absent: break
        case .invalid: return nil
        case .value(let text):
            guard jwtBearer else {
                report(subjectPath, "is only used with grant: jwt_bearer", at: fields["assertionSubject"])
                return nil
            }
            subject = text
        }
        if jwtBearer || refresh {
            var valid = true
            for key in ["subjectTokenFile", "subjectTokenType"] where fields[key].map({ !Self.isNull($0) }) ?? false {
                report(Self.join(path, key), "is only used with grant: token_exchange", at: fields[key])
                valid = false
            }
            guard valid else { return nil }
            if let refreshFile { return .refreshToken(file: refreshFile) }
            return .jwtBearer(subject: subject)
        }
        guard exchange else {
            var valid = true
            for key in ["subjectTokenFile", "subjectTokenType"] where fields[key].map({ !Self.isNull($0) }) ?? false {
                report(Self.join(path, key), "is only used with grant: token_exchange", at: fields[key])
                valid = false
            }
            return valid ? .clientCredentials : nil
        }
        let filePath = Self.join(path, "subjectTokenFile")
        var file: String?
        switch string(fields["subjectTokenFile"], path: filePath) {
        case .absent:
            report(filePath, "required key is missing: grant: token_exchange sends the token this file holds as subject_token (e.g. a Kubernetes projected service-account token)", at: node)
        case .invalid: break
        case .value(let text):
            if text.isEmpty {
                report(filePath, "is empty; expected the path of a file holding the subject token", at: fields["subjectTokenFile"])
            } else {
                file = resolve(path: text)
            }
        }
        var type = STSSettings.jwtTokenType
        switch tokenTypeURI(fields["subjectTokenType"], path: Self.join(path, "subjectTokenType")) {
        case .absent: break
        case .invalid: return nil
        case .value(let uri): type = uri
        }
        guard let file else { return nil }
        return .sts(subjectTokenFile: file, subjectTokenType: type)
    }

    /// A token type identifier (RFC 8693 §3): an absolute URI such as
    /// `urn:ietf:params:oauth:token-type:jwt`.
    mutating func tokenTypeURI(_ node: Node?, path: String) -> Field<String> {
        switch string(node, path: path) {
        case .absent: return .absent
        case .invalid: return .invalid
        case .value(let text):
            guard Self.isAbsoluteURI(text) else {
                report(path, "must be a token type URI, e.g. urn:ietf:params:oauth:token-type:jwt (RFC 8693 §3)", at: node)
                return .invalid
            }
            return .value(text)
        }
    }

    /// `signingKeyFile`, `signingKeyId`, `assertionAudience` and `assertionLifetime`: settings for
    /// the two JWT methods (`signingKeyFile` required for `private_key_jwt`, refused for
    /// `client_secret_jwt`); each key is refused with any other method.
    /// With `grant: jwt_bearer` (`grantSigns`), `signingKeyFile` signs the grant's assertion
    /// (and a `private_key_jwt` client's own, with the same key), whatever the client authentication.
    private mutating func decodeAssertionSettings(_ fields: [String: Node], path: String, auth: ClientAuthMethod,
                                                  grantSigns: Bool, node: Node) -> Field<JWTAssertionSettings> {
        let given = ConfigKeys.assertion.filter { key in fields[key].map { !Self.isNull($0) } ?? false }
        if grantSigns && auth == .clientSecretJWT {
            report(Self.join(path, "auth"), "grant: jwt_bearer signs its assertion with signingKeyFile; authenticate the client with basic, post, private_key_jwt or none", at: fields["auth"])
            return .invalid
        }
        guard auth.signsAssertion || grantSigns else {
            for key in given {
                let users = key == "signingKeyFile" ? "auth: private_key_jwt" : "auth: private_key_jwt or client_secret_jwt"
                report(Self.join(path, key), "is only used with \(users) (auth is \(auth.rawValue))", at: fields[key])
            }
            return given.isEmpty ? .absent : .invalid
        }
        var settings = JWTAssertionSettings()
        var valid = true
        let keyPath = Self.join(path, "signingKeyFile")
        if auth == .clientSecretJWT {
            if given.contains("signingKeyFile") {
                report(keyPath, "client_secret_jwt signs HS256 with the client secret; signingKeyFile is only used with auth: private_key_jwt", at: fields["signingKeyFile"])
                valid = false
            }
        } else {
            switch pemFile(fields["signingKeyFile"], path: keyPath, kind: .privateKey) {
            case .absent:
                let who = grantSigns ? "grant: jwt_bearer" : "auth: private_key_jwt"
                report(keyPath, "required key is missing: \(who) signs with this PEM private key (RSA for RS256, EC P-256 for ES256)", at: node)
                valid = false
            case .invalid: valid = false
            case .value(let file): settings.signingKeyFile = file
            }
        }
        for (key, keyPath) in [("signingKeyId", \JWTAssertionSettings.keyId), ("assertionAudience", \JWTAssertionSettings.audience)] {
            switch plainText(fields[key], path: Self.join(path, key)) {
            case .absent: break
            case .invalid: valid = false
            case .value(let text): settings[keyPath: keyPath] = text
            }
        }
        let lifetimePath = Self.join(path, "assertionLifetime")
        switch duration(fields["assertionLifetime"], path: lifetimePath) {
        case .absent: break
        case .invalid: valid = false
        case .value(let lifetime):
            if lifetime < .seconds(1) || lifetime > JWTAssertionSettings.maximumLifetime {
                report(lifetimePath, "must be between 1s and 5m (an assertion is meant to be short-lived)", at: fields["assertionLifetime"])
                valid = false
            } else {
                settings.lifetime = lifetime
            }
        }
        return valid ? .value(settings) : .invalid
    }

    /// `assertionFile`: required for `assertion_file` (a path, resolved against the config's
    /// directory; it need not exist yet: a kubelet or spiffe-helper may write it after start),
    /// refused with any other method.
    private mutating func decodeAssertionFile(_ fields: [String: Node], path: String, auth: ClientAuthMethod, node: Node) -> Field<String> {
        let keyPath = Self.join(path, "assertionFile")
        switch string(fields["assertionFile"], path: keyPath) {
        case .absent:
            guard auth == .assertionFile else { return .absent }
            report(keyPath, "required key is missing: auth: assertion_file sends the JWT this file holds (e.g. a Kubernetes projected service-account token)", at: node)
            return .invalid
        case .invalid:
            return .invalid
        case .value(let text):
            guard auth == .assertionFile else {
                report(keyPath, "is only used with auth: assertion_file (auth is \(auth.rawValue))", at: fields["assertionFile"])
                return .invalid
            }
            guard !text.isEmpty else {
                report(keyPath, "is empty; expected the path of a file holding a JWT", at: fields["assertionFile"])
                return .invalid
            }
            return .value(resolve(path: text))
        }
    }

    /// `scope`, `audience` or `resource`: optional, but not empty when given;
    /// `resource` must be an absolute URI without a fragment (RFC 8707).
    mutating func optionalParameter(_ node: Node?, path: String, name: String) -> Field<String> {
        switch string(node, path: path) {
        case .absent: return .absent
        case .invalid: return .invalid
        case .value(let text):
            if text.isEmpty {
                report(path, "is empty; omit the key to send no \(name)", at: node)
                return .invalid
            }
            if let problem = Self.plainTextProblem(text) {
                report(path, problem, at: node)
                return .invalid
            }
            if name == "resource", !Self.isAbsoluteURI(text) {
                report(path, "must be an absolute URI without a fragment, e.g. https://api.example.com (RFC 8707)", at: node)
                return .invalid
            }
            return .value(text)
        }
    }

    /// `scheme:rest` with an RFC 3986 scheme, no fragment and no spaces.
    static func isAbsoluteURI(_ text: String) -> Bool {
        guard let colon = text.firstIndex(of: ":"), !text.contains("#"), !text.contains(" ") else { return false }
        let scheme = text[..<colon]
        guard let first = scheme.unicodeScalars.first, first.isASCII, first.properties.isAlphabetic else { return false }
        return scheme.unicodeScalars.allSatisfy {
            $0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0) || $0 == "+" || $0 == "-" || $0 == ".")
        } && text.index(after: colon) < text.endIndex
    }

    /// `params:` — a mapping of extra form parameters to string values, in
    /// file order. Names the sidecar sets itself are rejected. Values are
    /// never shown in messages.
    private mutating func decodeFormParameters(_ node: Node?, path: String) -> [FormParameter]? {
        guard let node, !Self.isNull(node) else { return [] }
        guard let entries = mapping(node, path: path, expected: "a mapping of form parameter names to string values") else {
            return nil
        }
        var params: [FormParameter] = []
        var valid = true
        for entry in entries {
            let keyPath = Self.join(path, entry.key)
            if entry.key.isEmpty {
                report(path, "parameter names must not be empty", line: entry.line)
                valid = false
                continue
            }
            if ConfigKeys.reservedParams.contains(entry.key) {
                let own = ["scope", "audience", "resource"].contains(entry.key)
                    ? "use the \(entry.key) key of the credential instead"
                    : "token-sidecar sets it itself"
                report(keyPath, "\(entry.key) cannot be given under params; \(own)", line: entry.line)
                valid = false
                continue
            }
            switch string(entry.value, path: keyPath, nullIsAbsent: false) {
            case .value(let value):
                params.append(FormParameter(name: entry.key, value: value))
            case .absent, .invalid:
                valid = false
            }
        }
        return valid ? params : nil
    }
}
