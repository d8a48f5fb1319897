import Yams

/// Process-wide settings can be overridden without editing the file: `TOKEN_SIDECAR_<KEY>`
/// (the key in upper snake case, e.g. `TOKEN_SIDECAR_LISTEN`, `TOKEN_SIDECAR_LOG_LEVEL`,
/// `TOKEN_SIDECAR_TIMEOUTS_CONNECT`) replaces the value written in the file, and is validated
/// like it. Credentials and routes use `${VAR}` in the file instead.
public enum EnvironmentOverrides {
    /// Top-level keys that can be overridden.
    public static let topLevelKeys = [
        "listen", "admin", "workers", "logLevel", "otherHosts", "accessLog", "drainTimeout",
        "cacheSize", "maxConnectionsPerUpstream", "maxClientConnections",
    ]
    /// Keys under `timeouts:` that can be overridden.
    public static let timeoutKeys = ["connect", "responseHeaders", "clientHeader", "idle", "upstreamIdle", "bodyIdle", "upgradedIdle"]
    /// Keys under `spool:` that can be overridden.
    public static let spoolKeys = ["directory", "maxBytes"]
    /// Sections whose keys can be overridden one by one.
    static let sections = [("timeouts", timeoutKeys), ("spool", spoolKeys)]

    /// `TOKEN_SIDECAR_` + the key path in upper snake case.
    public static func variable(for keyPath: String) -> String {
        var out = "TOKEN_SIDECAR_"
        for character in keyPath {
            if character == "." {
                out += "_"
            } else if character.isUppercase {
                out += "_" + String(character)
            } else {
                out += character.uppercased()
            }
        }
        return out
    }

    /// Replaces values in the parsed document's root mapping.
    static func apply(to root: Node, environment: [String: String]) -> Node {
        guard var mapping = root.mapping else { return root }
        for key in topLevelKeys {
            if let value = environment[variable(for: key)] {
                mapping[Node(key)] = Node(value, Tag(.str), .doubleQuoted)
            }
        }
        for (section, keys) in sections {
            var entries = mapping[Node(section)]?.mapping
            var changed = false
            for key in keys {
                if let value = environment[variable(for: "\(section).\(key)")] {
                    if entries == nil { entries = Node.Mapping([]) }
                    entries?[Node(key)] = Node(value, Tag(.str), .doubleQuoted)
                    changed = true
                }
            }
            if changed, let entries { mapping[Node(section)] = Node.mapping(entries) }
        }
        return Node.mapping(mapping)
    }
}
