import Yams

extension ConfigDecoder {
    /// `type: aws`: `placeholderAccessKeyId` (16–128 letters and digits, as AWS key ids are) and
    /// exactly one source of the real keys: files (`accessKeyIdFile`, `secretAccessKeyFile`,
    /// optional `sessionTokenFile`, resolved against the config file's directory), `webIdentity`
    /// or `containerCredentials`; `refreshAt`, `tokenWait`… as for tokens.
    mutating func decodeAWS(_ fields: [String: Node], path: String, node: Node) -> AWSCredentialConfig? {
        var valid = true
        var placeholder: String?
        let placeholderPath = Self.join(path, "placeholderAccessKeyId")
        switch string(fields["placeholderAccessKeyId"], path: placeholderPath) {
        case .absent:
            report(placeholderPath, "required key is missing: the access key id the app signs with (e.g. AKIDTOKENSIDECAR0001)", at: node)
            valid = false
        case .invalid: valid = false
        case .value(let text):
            if (16...128).contains(text.count), text.unicodeScalars.allSatisfy({ $0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0)) }) {
                placeholder = text
            } else {
                report(placeholderPath, "must be 16 to 128 letters and digits, as an access key id is", at: fields["placeholderAccessKeyId"])
                valid = false
            }
        }
        let given = ["accessKeyIdFile", "webIdentity", "containerCredentials"].filter { fields[$0].map { !Self.isNull($0) } ?? false }
        guard given.count == 1, let kind = given.first else {
            let found = given.isEmpty ? "none is given" : "found \(given.joined(separator: " and "))"
            report(path, "an aws credential needs exactly one source: accessKeyIdFile (with secretAccessKeyFile), webIdentity or containerCredentials; \(found)",
                   at: node)
            return nil
        }
        if kind != "accessKeyIdFile" {
            for key in ["secretAccessKeyFile", "sessionTokenFile"] where fields[key] != nil {
                report(Self.join(path, key), "goes with accessKeyIdFile, not with \(kind)", at: fields[key])
                valid = false
            }
        }
        let source: AWSCredentialSource?
        var tls = TLSSettings.default
        switch kind {
        case "webIdentity":
            let decoded = decodeWebIdentity(fields["webIdentity"]!, path: Self.join(path, "webIdentity"))
            source = decoded.map { .webIdentity($0.0) }
            tls = decoded?.1 ?? tls
        case "containerCredentials":
            let decoded = decodeContainerCredentials(fields["containerCredentials"]!, path: Self.join(path, "containerCredentials"))
            source = decoded.map { .containerCredentials($0.0) }
            tls = decoded?.1 ?? tls
        default:
            source = decodeAWSFiles(fields, path: path, node: node)
        }
        let fetch = decodeFetchSettings(fields, path: path)
        guard valid, let placeholder, let source, let fetch else { return nil }
        return AWSCredentialConfig(placeholderAccessKeyId: placeholder, source: source, fetch: fetch, tls: tls)
    }

    private mutating func decodeAWSFiles(_ fields: [String: Node], path: String, node: Node) -> AWSCredentialSource? {
        var valid = true
        var files: [String: String] = [:]
        for key in ["accessKeyIdFile", "secretAccessKeyFile", "sessionTokenFile"] {
            let keyPath = Self.join(path, key)
            switch string(fields[key], path: keyPath) {
            case .absent:
                if key != "sessionTokenFile" {
                    report(keyPath, "required key is missing: the file holding the real \(key == "accessKeyIdFile" ? "access key id" : "secret access key")", at: node)
                    valid = false
                }
            case .invalid: valid = false
            case .value(let text):
                guard !text.isEmpty else {
                    report(keyPath, "is empty; expected a file path", at: fields[key])
                    valid = false
                    continue
                }
                files[key] = resolve(path: text)
            }
        }
        guard valid, let id = files["accessKeyIdFile"], let secret = files["secretAccessKeyFile"] else { return nil }
        return .files(accessKeyIdFile: id, secretAccessKeyFile: secret, sessionTokenFile: files["sessionTokenFile"])
    }

    /// A required text of a source mapping, or the environment variable EKS or ECS sets for it.
    private mutating func textOrEnvironment(_ fields: [String: Node], _ key: String, path: String, variable: String,
                                            what: String, at node: Node) -> String? {
        switch string(fields[key], path: Self.join(path, key)) {
        case .invalid: return nil
        case .value(let text) where !text.isEmpty: return text
        case .value, .absent:
            if let value = environment[variable], !value.isEmpty { return value }
            report(Self.join(path, key), "required key is missing and \(variable) is not set: \(what)", at: node)
            return nil
        }
    }

    /// `webIdentity: {roleArn, tokenFile, stsEndpoint, sessionName, duration, caFile}`.
    private mutating func decodeWebIdentity(_ node: Node, path: String) -> (AWSWebIdentity, TLSSettings)? {
        let entries: [Entry]
        if Self.isNull(node) { entries = [] } else {
            guard let mapped = mapping(node, path: path, expected: "a mapping with roleArn, tokenFile, stsEndpoint, sessionName, duration, caFile") else { return nil }
            entries = mapped
        }
        checkKeys(entries, allowed: ConfigKeys.awsWebIdentity, path: path)
        let fields = Self.index(entries)
        var valid = !entries.contains { !ConfigKeys.awsWebIdentity.contains($0.key) }
        let role = textOrEnvironment(fields, "roleArn", path: path, variable: "AWS_ROLE_ARN", what: "the role to assume", at: node)
        let file = textOrEnvironment(fields, "tokenFile", path: path, variable: "AWS_WEB_IDENTITY_TOKEN_FILE",
                                     what: "the projected service account token's file", at: node).map { resolve(path: $0) }
        if let role, !role.hasPrefix("arn:") {
            report(Self.join(path, "roleArn"), "is not a role ARN (arn:aws:iam::123456789012:role/name)", at: fields["roleArn"])
            valid = false
        }
        var endpoint: EndpointURL?
        switch self.endpoint(fields["stsEndpoint"], path: Self.join(path, "stsEndpoint")) {
        case .invalid: valid = false
        case .value(let url): endpoint = url
        case .absent:
            let region = environment["AWS_REGION"] ?? environment["AWS_DEFAULT_REGION"]
            let text = region.map { "https://sts.\($0).amazonaws.com" } ?? "https://sts.amazonaws.com"
            if case .success(let url) = EndpointURL.parse(text, allowQuery: false) { endpoint = url } else {
                report(Self.join(path, "stsEndpoint"), "AWS_REGION does not make an STS endpoint; set stsEndpoint", at: node)
                valid = false
            }
        }
        var sessionName = "token-sidecar"
        switch plainText(fields["sessionName"], path: Self.join(path, "sessionName")) {
        case .absent: break
        case .invalid: valid = false
        case .value(let text): sessionName = text
        }
        var duration: Duration?
        switch self.duration(fields["duration"], path: Self.join(path, "duration")) {
        case .absent: break
        case .invalid: valid = false
        case .value(let value):
            if value < .seconds(900) || value > .seconds(43_200) {
                report(Self.join(path, "duration"), "must be between 15m and 12h (STS's DurationSeconds)", at: fields["duration"])
                valid = false
            } else {
                duration = value
            }
        }
        let tls = decodeTLSSettings(fields, path: path)
        guard valid, let role, let file, let endpoint, let settings = tls.settings else { return nil }
        return (AWSWebIdentity(roleArn: role, tokenFile: file, stsEndpoint: endpoint, sessionName: sessionName, duration: duration), settings)
    }

    /// `containerCredentials: {uri, authorizationTokenFile, caFile}`.
    private mutating func decodeContainerCredentials(_ node: Node, path: String) -> (AWSContainerCredentials, TLSSettings)? {
        let entries: [Entry]
        if Self.isNull(node) { entries = [] } else {
            guard let mapped = mapping(node, path: path, expected: "a mapping with uri, authorizationTokenFile, caFile") else { return nil }
            entries = mapped
        }
        checkKeys(entries, allowed: ConfigKeys.awsContainerCredentials, path: path)
        let fields = Self.index(entries)
        var valid = !entries.contains { !ConfigKeys.awsContainerCredentials.contains($0.key) }
        var uri: EndpointURL?
        // ECS tasks are given a path on the agent's fixed address; the AWS SDKs (botocore, the
        // SDK reference) take it before a full URI when both are set.
        let relative = fields["uri"] == nil
            ? environment["AWS_CONTAINER_CREDENTIALS_RELATIVE_URI"].map { "http://169.254.170.2" + ($0.hasPrefix("/") ? "" : "/") + $0 } : nil
        if let text = relative ?? textOrEnvironment(fields, "uri", path: path, variable: "AWS_CONTAINER_CREDENTIALS_FULL_URI",
                                                    what: "the container credentials endpoint (or AWS_CONTAINER_CREDENTIALS_RELATIVE_URI)",
                                                    at: node) {
            switch EndpointURL.parse(text, allowQuery: false) {
            case .success(let url): uri = url
            case .failure(let error):
                report(Self.join(path, "uri"), "invalid URL: \(error.message)", at: fields["uri"] ?? node)
                valid = false
            }
        }
        var tokenFile: String?
        switch string(fields["authorizationTokenFile"], path: Self.join(path, "authorizationTokenFile")) {
        case .invalid: valid = false
        case .value(let text) where !text.isEmpty: tokenFile = resolve(path: text)
        case .value, .absent: tokenFile = environment["AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE"].map { resolve(path: $0) }
        }
        let tls = decodeTLSSettings(fields, path: path)
        guard valid, let uri, let settings = tls.settings else { return nil }
        return (AWSContainerCredentials(uri: uri, authorizationTokenFile: tokenFile), settings)
    }
}
