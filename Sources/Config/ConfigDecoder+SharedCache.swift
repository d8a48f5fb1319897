import Yams

extension ConfigDecoder {
    /// `sharedCache:` — nil when absent (or invalid; the problems are reported).
    mutating func decodeSharedCache(_ node: Node?) -> SharedCacheConfig? {
        guard let node, !Self.isNull(node) else { return nil }
        let path = "sharedCache"
        guard let entries = mapping(node, path: path, expected: "a mapping with url and encryptionKeyFile") else { return nil }
        checkKeys(entries, allowed: ConfigKeys.sharedCache, path: path)
        let fields = Self.index(entries)
        var valid = true

        var url: RedisURL?
        switch string(fields["url"], path: "sharedCache.url") {
        case .absent:
            report("sharedCache.url", "required key is missing (e.g. redis://redis.tokens.svc:6379/0)", at: node)
            valid = false
        case .invalid: valid = false
        case .value(let text):
            switch RedisURL.parse(text) {
            case .success(let parsed): url = parsed
            case .failure(let error):
                report("sharedCache.url", error.message, at: fields["url"])
                valid = false
            }
        }

        let (tls, given) = decodeTLSSettings(fields, path: path)
        if tls == nil { valid = false }
        if let url, !url.isTLS, !given.isEmpty {
            for key in given { report(Self.join(path, key), "TLS settings need a rediss:// URL", at: fields[key]) }
            valid = false
        }

        let passwordFile = secretFile(fields["passwordFile"], path: "sharedCache.passwordFile", noun: "password", valid: &valid)
        let usernameFile = secretFile(fields["usernameFile"], path: "sharedCache.usernameFile", noun: "user name", valid: &valid)
        if usernameFile != nil, passwordFile == nil, fields["passwordFile"] == nil {
            report("sharedCache.usernameFile", "usernameFile needs passwordFile as well (AUTH user password)", at: fields["usernameFile"])
            valid = false
        }

        var keyFile: String?
        switch string(fields["encryptionKeyFile"], path: "sharedCache.encryptionKeyFile") {
        case .absent:
            report("sharedCache.encryptionKeyFile",
                   "required key is missing: a file with a 32-byte key (raw or base64) that seals cached tokens", at: node)
            valid = false
        case .invalid: valid = false
        case .value(let text):
            let resolved = resolve(path: text)
            if text.isEmpty {
                report("sharedCache.encryptionKeyFile", "is empty; expected the path of a key file", at: fields["encryptionKeyFile"])
                valid = false
            } else if case .failure(let problem) = EncryptionKeyFile.load(resolved) {
                report("sharedCache.encryptionKeyFile", problem.message, at: fields["encryptionKeyFile"])
                valid = false
            } else {
                keyFile = resolved
            }
        }

        var prefix = SharedCacheConfig.defaultKeyPrefix
        switch string(fields["keyPrefix"], path: "sharedCache.keyPrefix", nullIsAbsent: true) {
        case .absent: break
        case .invalid: valid = false
        case .value(let text):
            if text.utf8.count > 128 || text.unicodeScalars.contains(where: { $0.value <= 0x20 || $0.value == 0x7F }) {
                report("sharedCache.keyPrefix", "must be at most 128 characters without spaces or control characters", at: fields["keyPrefix"])
                valid = false
            } else {
                prefix = text
            }
        }

        var timeout = SharedCacheConfig.defaultTimeout
        switch duration(fields["timeout"], path: "sharedCache.timeout") {
        case .absent: break
        case .invalid: valid = false
        case .value(let value):
            if value > .zero && value <= .seconds(10) {
                timeout = value
            } else {
                report("sharedCache.timeout", "must be greater than 0 and at most 10s", at: fields["timeout"])
                valid = false
            }
        }

        guard valid, let url, let tls, let keyFile else { return nil }
        return SharedCacheConfig(url: url, tls: tls, passwordFile: passwordFile, usernameFile: usernameFile,
                                 encryptionKeyFile: keyFile, keyPrefix: prefix, timeout: timeout)
    }

    /// A readable, non-empty secret file (its contents are checked, never reported).
    private mutating func secretFile(_ node: Node?, path: String, noun: String, valid: inout Bool) -> String? {
        switch string(node, path: path) {
        case .absent: return nil
        case .invalid:
            valid = false
            return nil
        case .value(let text):
            let resolved = resolve(path: text)
            if text.isEmpty {
                report(path, "is empty; expected the path of a file", at: node)
            } else if case .failure(let problem) = SecretSource.file(resolved).readResult(environment: [:], noun: noun) {
                report(path, problem.message, at: node)
            } else {
                return resolved
            }
            valid = false
            return nil
        }
    }
}
