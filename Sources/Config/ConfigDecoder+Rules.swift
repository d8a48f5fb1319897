import Yams

extension ConfigDecoder {
    /// A route's `rules:` (a list of `{name, methods, paths}`) and `enforcement:` (default: the
    /// top-level one); nil policy when the route has no rules. `valid` is false when anything was
    /// reported.
    mutating func decodePolicy(_ fields: [String: Node], path: String) -> (policy: RoutePolicy?, valid: Bool) {
        var valid = true
        var enforcement = defaultEnforcement
        switch choice(fields["enforcement"], path: Self.join(path, "enforcement"), as: Enforcement.self) {
        case .absent: break
        case .invalid: valid = false
        case .value(let chosen): enforcement = chosen
        }
        guard let node = fields["rules"], !Self.isNull(node) else {
            if fields["enforcement"] != nil {
                report(Self.join(path, "enforcement"), "applies to a route's rules; this route has none", at: fields["enforcement"])
                valid = false
            }
            return (nil, valid)
        }
        let rulesPath = Self.join(path, "rules")
        guard case .sequence(let items) = node, !items.isEmpty else {
            report(rulesPath, "expected a list of rules, e.g. [{name: read, methods: [GET], paths: [\"/v1/**\"]}]", at: node)
            return (nil, false)
        }
        var rules: [RouteRule] = []
        var names: Set<String> = []
        for (index, item) in items.enumerated() {
            let itemPath = "\(rulesPath)[\(index)]"
            guard let entries = mapping(item, path: itemPath, expected: "a mapping with name, methods, paths") else {
                valid = false
                continue
            }
            checkKeys(entries, allowed: ConfigKeys.rule, path: itemPath)
            if entries.contains(where: { !ConfigKeys.rule.contains($0.key) }) { valid = false }
            let inner = Self.index(entries)
            var rule = RouteRule(name: "rule \(index + 1)")
            switch plainText(inner["name"], path: Self.join(itemPath, "name")) {
            case .absent: break
            case .invalid: valid = false
            case .value(let name):
                if !names.insert(name).inserted {
                    report(Self.join(itemPath, "name"), "'\(name)' names another rule of this route already", at: inner["name"])
                    valid = false
                }
                rule.name = name
            }
            if let methods = stringList(inner["methods"], path: Self.join(itemPath, "methods")) {
                for method in methods where !Self.isMethodToken(method) {
                    report(Self.join(itemPath, "methods"), "'\(method)' is not a method (uppercase letters, as GET or POST)", at: inner["methods"])
                    valid = false
                }
                rule.methods = methods
            } else if inner["methods"] != nil { valid = false }
            if let paths = stringList(inner["paths"], path: Self.join(itemPath, "paths")) {
                for text in paths {
                    switch PathPattern.parse(text) {
                    case .success(let pattern): rule.paths.append(pattern)
                    case .failure(let error):
                        report(Self.join(itemPath, "paths"), "'\(text)': \(error)", at: inner["paths"])
                        valid = false
                    }
                }
            } else if inner["paths"] != nil { valid = false }
            if inner["methods"] == nil && inner["paths"] == nil {
                report(itemPath, "a rule needs methods, paths or both (a rule that allows everything is no rule)", at: item)
                valid = false
            }
            rules.append(rule)
        }
        return (valid ? RoutePolicy(rules: rules, enforcement: enforcement) : nil, valid)
    }

    /// `audit: {file: PATH}` (`-`: stdout); nil when absent.
    mutating func decodeAudit(_ node: Node?) -> AuditConfig? {
        guard let node, !Self.isNull(node) else { return nil }
        guard let entries = mapping(node, path: "audit", expected: "a mapping with file (a path, or - for stdout)") else { return nil }
        checkKeys(entries, allowed: ConfigKeys.audit, path: "audit")
        let fields = Self.index(entries)
        guard fields["file"] != nil else {
            report("audit.file", "required: where audit records go (a path, or - for stdout)", at: node)
            return nil
        }
        guard case .value(let file) = plainText(fields["file"], path: "audit.file") else { return nil }
        return AuditConfig(file: file == "-" ? file : resolve(path: file))
    }

    /// A non-empty list of strings, or nil (reported) when it is not one.
    private mutating func stringList(_ node: Node?, path: String) -> [String]? {
        guard let node else { return nil }
        guard case .sequence(let items) = node, !items.isEmpty else {
            report(path, "expected a non-empty list", at: node)
            return nil
        }
        var values: [String] = []
        for (index, item) in items.enumerated() {
            guard case .value(let text) = string(item, path: "\(path)[\(index)]") else { return nil }
            values.append(text)
        }
        return values
    }

    /// RFC 9110's method token, as written by convention: uppercase letters (and `-`).
    static func isMethodToken(_ text: String) -> Bool {
        !text.isEmpty && text.utf8.allSatisfy { (0x41...0x5A).contains($0) || $0 == 0x2D }
    }
}
