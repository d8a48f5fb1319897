import Yams

/// Walks a composed YAML tree and builds a `SidecarConfig`, collecting every
/// problem instead of stopping at the first. Values of keys are never put
/// into messages for secret keys; see `string(_:path:nullIsAbsent:)`.
struct ConfigDecoder {
    /// The outcome of reading one key.
    enum Field<Value> {
        /// The key is not there (or is null where null means "not set").
        case absent
        /// The key is there but wrong; a problem has already been reported,
        /// so callers must not report a second one about the same key.
        case invalid
        /// The key's value.
        case value(Value)
    }

    /// One key of a mapping with its value.
    struct Entry {
        let key: String
        let line: Int?
        let value: Node
    }

    let file: String
    let environment: [String: String]
    /// Directory that relative file paths (`tokenFile`, `secretFile`,
    /// `caFile`, ...) resolve against; nil keeps
    /// them as written (relative to the working directory).
    let baseDirectory: String?
    private(set) var problems: [ConfigProblem] = []
    /// The top-level `enforcement:`, for routes whose rules do not say (set before the routes
    /// are decoded).
    var defaultEnforcement = Enforcement.enforce

    init(file: String, environment: [String: String], baseDirectory: String?) {
        self.file = file
        self.environment = environment
        self.baseDirectory = baseDirectory
    }

    // MARK: - Top level

    /// Decodes the document. The result is only meaningful when `problems` is empty.
    mutating func decode(_ root: Node) -> SidecarConfig {
        var config = SidecarConfig(file: file)
        guard let entries = mapping(root, path: "(root)", expected: "a mapping of settings such as listen and routes") else {
            return config
        }
        checkKeys(entries, allowed: ConfigKeys.root, path: "")
        let fields = Self.index(entries)

        if case .value(let text) = string(fields["listen"], path: "listen") {
            switch ListenAddress.parse(text) {
            case .success(let address): config.listen = address
            case .failure(let error): report("listen", "invalid listen address '\(text)': \(error.message)", at: fields["listen"])
            }
        }
        if case .value(let workers) = int(fields["workers"], path: "workers") {
            if ConfigKeys.workers.contains(workers) {
                config.workers = workers
            } else {
                report("workers", "must be between \(ConfigKeys.workers.lowerBound) and \(ConfigKeys.workers.upperBound) (got \(workers))", at: fields["workers"])
            }
        }
        if case .value(let level) = choice(fields["logLevel"], path: "logLevel", as: LogLevel.self) {
            config.logLevel = level
        }
        if case .value(let policy) = choice(fields["otherHosts"], path: "otherHosts", as: OtherHostsPolicy.self) {
            config.otherHosts = policy
        }
        if let size = boundedInt(fields["cacheSize"], path: "cacheSize", range: ConfigKeys.cacheSize) {
            config.cacheSize = size
        }
        if let limit = boundedInt(
            fields["maxConnectionsPerUpstream"], path: "maxConnectionsPerUpstream", range: ConfigKeys.maxConnectionsPerUpstream
        ) {
            config.maxConnectionsPerUpstream = limit
        }
        if let limit = boundedInt(
            fields["maxClientConnections"], path: "maxClientConnections", range: ConfigKeys.maxClientConnections
        ) {
            config.maxClientConnections = limit
        }
        if case .value(let text) = string(fields["admin"], path: "admin") {
            switch ListenAddress.parse(text) {
            case .success(let address): config.admin = address
            case .failure(let error): report("admin", "invalid admin address '\(text)': \(error.message)", at: fields["admin"])
            }
        }
        if case .value(let enabled) = bool(fields["accessLog"], path: "accessLog") {
            config.accessLog = enabled
        }
        if case .value(let drain) = duration(fields["drainTimeout"], path: "drainTimeout") {
            config.drainTimeout = drain
        }
        config.timeouts = decodeTimeouts(fields["timeouts"])
        config.connectPolicy = decodeConnectPolicy(fields["connect"])
        config.spool = decodeSpool(fields["spool"])
        config.sharedCache = decodeSharedCache(fields["sharedCache"])
        config.intercept = decodeIntercept(fields["intercept"])
        config.tracing = decodeTracing(fields["tracing"])
        config.audit = decodeAudit(fields["audit"])
        if case .value(let enforcement) = choice(fields["enforcement"], path: "enforcement", as: Enforcement.self) {
            config.enforcement = enforcement
            defaultEnforcement = enforcement
        }
        let credentials = decodeCredentials(fields["credentials"])
        config.credentials = credentials.configs
        let problemsBeforeRoutes = problems.count
        config.routes = decodeRoutes(fields["routes"], credentialNames: credentials.names, credentials: credentials.configs)
        if problems.count == problemsBeforeRoutes {
            // Only with every route decoded: a refused route would make its credential look unused.
            checkPublicClients(config)
        }
        config.credentialEndpoints = decodeCredentialEndpoints(fields["credentialEndpoints"], credentials: credentials.configs)
        if fields["intercept"] == nil, let index = config.routes.firstIndex(where: \.intercept) {
            report("routes[\(index)].intercept", "needs the top-level intercept section (at least intercept.caCertFile: where the CA certificate apps trust is written)", line: nil)
        }
        return config
    }

    /// `auth: none` (a public client) only where a subject token is the proof: with
    /// `grant: token_exchange`, or for a credential every route uses with `clientAuthorization: exchange`.
    private mutating func checkPublicClients(_ config: SidecarConfig) {
        for credential in config.credentials {
            guard case .oauth2(let oauth) = credential.kind, oauth.auth == .none, oauth.grant == .clientCredentials else { continue }
            let users = config.routes.filter { $0.credential == credential.name }
            if users.isEmpty || users.contains(where: { $0.clientAuthorization != .exchange }) {
                report("credentials.\(credential.name).auth", "none (no client authentication) is only for token exchange: set grant: token_exchange, or use the credential only on routes with clientAuthorization: exchange", line: nil)
            }
        }
    }

    // MARK: - Reporting

    mutating func report(_ path: String, _ message: String, at node: Node?) {
        report(path, message, line: node?.mark?.line)
    }

    mutating func report(_ path: String, _ message: String, line: Int?) {
        problems.append(ConfigProblem(file: file, keyPath: path.isEmpty ? "(root)" : path, message: message, line: line))
    }

    /// `parent.key`, or just `key` at the top level.
    static func join(_ parent: String, _ key: String) -> String {
        parent.isEmpty ? key : "\(parent).\(key)"
    }

    /// "a mapping", "a list", "a string", "an empty value" — for type errors.
    static func describe(_ node: Node) -> String {
        switch node {
        case .mapping: return "a mapping"
        case .sequence: return "a list"
        case .alias: return "an alias"
        case .scalar(let scalar): return isNull(scalar) ? "an empty value" : "a scalar value"
        }
    }

    /// Plain `~`, `null` or nothing at all; quoted strings are never null.
    static func isNull(_ scalar: Node.Scalar) -> Bool {
        scalar.style == .plain && ["", "~", "null", "Null", "NULL"].contains(scalar.string)
    }

    static func isNull(_ node: Node) -> Bool {
        if case .scalar(let scalar) = node { return isNull(scalar) }
        return false
    }

    // MARK: - Structure

    /// The entries of a mapping node, or nil (with a problem reported) when
    /// the node is something else. Keys that are not scalars are reported.
    mutating func mapping(_ node: Node, path: String, expected: String) -> [Entry]? {
        guard case .mapping(let mapping) = node else {
            report(path, "expected \(expected), got \(Self.describe(node))", at: node)
            return nil
        }
        var entries: [Entry] = []
        for (key, value) in mapping {
            guard case .scalar(let scalar) = key else {
                report(path, "keys must be plain strings, got \(Self.describe(key)) as a key", at: key)
                continue
            }
            entries.append(Entry(key: scalar.string, line: key.mark?.line, value: value))
        }
        return entries
    }

    /// Reports every key not in `allowed`, suggesting a close known key.
    mutating func checkKeys(_ entries: [Entry], allowed: [String], path: String) {
        for entry in entries where !allowed.contains(entry.key) {
            // The value is deliberately not mentioned: a misspelled "tokn:" holds a secret.
            let hint = Suggestions.closest(to: entry.key, in: allowed).map { " (did you mean '\($0)'?)" }
                ?? " (known keys: \(allowed.joined(separator: ", ")))"
            report(Self.join(path, entry.key), "unknown key\(hint)", line: entry.line)
        }
    }

    /// Entries by key (YAML duplicate keys are already rejected by Yams).
    static func index(_ entries: [Entry]) -> [String: Node] {
        Dictionary(entries.map { ($0.key, $0.value) }, uniquingKeysWith: { first, _ in first })
    }

    // MARK: - Scalars

    /// A string value with `${VAR}` expanded. Any scalar is accepted as text
    /// (`token: 12345` is the string "12345"). Messages from here never
    /// include the value, so this is safe for secrets.
    mutating func string(_ node: Node?, path: String, nullIsAbsent: Bool = true) -> Field<String> {
        guard let node else { return .absent }
        guard case .scalar(let scalar) = node else {
            report(path, "expected a string, got \(Self.describe(node))", at: node)
            return .invalid
        }
        if Self.isNull(scalar) { return nullIsAbsent ? .absent : .value("") }
        switch EnvironmentExpander.expand(scalar.string, environment: environment) {
        case .success(let text): return .value(text)
        case .failure(let error):
            report(path, error.message, at: node)
            return .invalid
        }
    }

    /// A decimal integer (after expansion, so `${WORKERS:-2}` works).
    mutating func int(_ node: Node?, path: String) -> Field<Int> {
        switch string(node, path: path) {
        case .absent: return .absent
        case .invalid: return .invalid
        case .value(let text):
            if let value = Int(text) { return .value(value) }
            report(path, "expected an integer, got '\(text)'", at: node)
            return .invalid
        }
    }

    /// `true` or `false` (any case).
    mutating func bool(_ node: Node?, path: String) -> Field<Bool> {
        switch string(node, path: path) {
        case .absent: return .absent
        case .invalid: return .invalid
        case .value(let text):
            switch text.lowercased() {
            case "true": return .value(true)
            case "false": return .value(false)
            default:
                report(path, "expected true or false, got '\(text)'", at: node)
                return .invalid
            }
        }
    }

    /// One of an enum's raw values (exact spelling), with a suggestion.
    mutating func choice<T: RawRepresentable & CaseIterable>(_ node: Node?, path: String, as type: T.Type) -> Field<T>
    where T.RawValue == String {
        switch string(node, path: path) {
        case .absent: return .absent
        case .invalid: return .invalid
        case .value(let text):
            if let value = T(rawValue: text) { return .value(value) }
            let names = T.allCases.map(\.rawValue)
            let hint = Suggestions.closest(to: text, in: names).map { " (did you mean '\($0)'?)" } ?? ""
            report(path, "'\(text)' is not one of \(names.joined(separator: ", "))\(hint)", at: node)
            return .invalid
        }
    }

    /// A duration such as `5s` or `500ms` (for timeout keys).
    mutating func duration(_ node: Node?, path: String) -> Field<Duration> {
        switch string(node, path: path) {
        case .absent: return .absent
        case .invalid: return .invalid
        case .value(let text):
            switch DurationParser.parseResult(text) {
            case .success(let duration): return .value(duration)
            case .failure(let error):
                report(path, error.message, at: node)
                return .invalid
            }
        }
    }
}
