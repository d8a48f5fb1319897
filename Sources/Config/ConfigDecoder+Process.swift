import Yams

extension ConfigDecoder {
    /// An integer key that must lie in `range`.
    mutating func boundedInt(_ node: Node?, path: String, range: ClosedRange<Int>) -> Int? {
        guard case .value(let value) = int(node, path: path) else { return nil }
        guard range.contains(value) else {
            report(path, "must be between \(range.lowerBound) and \(range.upperBound) (got \(value))", at: node)
            return nil
        }
        return value
    }

    /// `timeouts:` — a mapping of optional durations, each greater than 0.
    mutating func decodeTimeouts(_ node: Node?) -> Timeouts {
        var timeouts = Timeouts.default
        guard let node, !Self.isNull(node) else { return timeouts }
        guard let entries = mapping(node, path: "timeouts", expected: "a mapping of timeout names to durations") else {
            return timeouts
        }
        checkKeys(entries, allowed: ConfigKeys.timeouts, path: "timeouts")
        let fields = Self.index(entries)
        let keys: [(name: String, keyPath: WritableKeyPath<Timeouts, Duration>)] = [
            ("connect", \.connect), ("responseHeaders", \.responseHeaders), ("clientHeader", \.clientHeader),
            ("idle", \.idle), ("upstreamIdle", \.upstreamIdle), ("bodyIdle", \.bodyIdle), ("upgradedIdle", \.upgradedIdle),
        ]
        for key in keys {
            let path = "timeouts.\(key.name)"
            guard case .value(let value) = duration(fields[key.name], path: path) else { continue }
            if value > .zero {
                timeouts[keyPath: key.keyPath] = value
            } else {
                report(path, "must be greater than 0", at: fields[key.name])
            }
        }
        return timeouts
    }

    /// `spool:` — `directory` (a path, relative to the config file's directory) and `maxBytes`
    /// (an integer or a size such as `512MiB`; 0 turns spooling off).
    mutating func decodeSpool(_ node: Node?) -> SpoolConfig {
        var spool = SpoolConfig()
        guard let node, !Self.isNull(node) else { return spool }
        guard let entries = mapping(node, path: "spool", expected: "a mapping with directory and maxBytes") else { return spool }
        checkKeys(entries, allowed: ConfigKeys.spool, path: "spool")
        let fields = Self.index(entries)
        if case .value(let directory) = string(fields["directory"], path: "spool.directory") {
            if directory.isEmpty {
                report("spool.directory", "must not be empty", at: fields["directory"])
            } else {
                spool.directory = resolve(path: directory)
            }
        }
        if case .value(let text) = string(fields["maxBytes"], path: "spool.maxBytes") {
            if let bytes = ByteSize.parse(text) {
                spool.maxBytes = bytes
            } else {
                report("spool.maxBytes", "expected a number of bytes such as 1073741824 or 1GiB (0 turns spooling off), got '\(text)'",
                       at: fields["maxBytes"])
            }
        }
        return spool
    }

    /// `connect: deny` or `connect: {allow: ["host:port", ...]}`.
    mutating func decodeConnectPolicy(_ node: Node?) -> ConnectPolicy {
        guard let node, !Self.isNull(node) else { return .deny }
        let usage = "expected deny or a mapping like {allow: [\"example.com:443\"]}"
        switch node {
        case .scalar:
            guard case .value(let text) = string(node, path: "connect") else { return .deny }
            if text != "deny" {
                let hint = text == "allow" ? "; list the allowed destinations under allow" : ""
                report("connect", "\(usage), got '\(text)'\(hint)", at: node)
            }
            return .deny
        case .mapping:
            guard let entries = mapping(node, path: "connect", expected: usage) else { return .deny }
            checkKeys(entries, allowed: ConfigKeys.connect, path: "connect")
            guard let list = Self.index(entries)["allow"], !Self.isNull(list) else {
                report("connect.allow", "required key is missing (or write connect: deny)", at: node)
                return .deny
            }
            return decodeConnectAllowList(list)
        default:
            report("connect", "\(usage), got \(Self.describe(node))", at: node)
            return .deny
        }
    }

    /// The `host:port` entries of `connect.allow`, normalized, without duplicates.
    private mutating func decodeConnectAllowList(_ node: Node) -> ConnectPolicy {
        guard case .sequence(let sequence) = node else {
            report("connect.allow", "expected a list of host:port entries, got \(Self.describe(node))", at: node)
            return .deny
        }
        if sequence.isEmpty {
            report("connect.allow", "is empty; write connect: deny to refuse every CONNECT request", at: node)
            return .deny
        }
        var allowed: [String] = []
        var firstIndex: [String: Int] = [:]
        for (index, item) in sequence.enumerated() {
            let path = "connect.allow[\(index)]"
            guard case .value(let text) = string(item, path: path, nullIsAbsent: false) else { continue }
            if text.contains("/") {
                report(path, "invalid entry '\(text)': write just host:port, without a scheme or path", at: item)
                continue
            }
            switch HostSyntax.parseAuthority(Substring(text), defaultPort: nil, what: "entry") {
            case .success(let parts):
                let normalized = "\(HostSyntax.bracketed(parts.host)):\(parts.port)"
                if let first = firstIndex[normalized] {
                    report(path, "duplicate entry \(normalized) (already connect.allow[\(first)])", at: item)
                } else {
                    firstIndex[normalized] = index
                    allowed.append(normalized)
                }
            case .failure(let error):
                report(path, "invalid entry '\(text)': \(error.message)", at: item)
            }
        }
        return .allow(allowed)
    }
}
