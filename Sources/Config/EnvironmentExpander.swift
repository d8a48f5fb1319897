/// Expands `${VAR}`, `${VAR:-default}` and `$$` inside scalar values.
///
/// A `$` followed by anything else is kept literally, so tokens that happen
/// to contain `$` need no escaping unless the `$` precedes `{` or `$`.
/// Defaults are taken literally (no nested expansion).
enum EnvironmentExpander {
    /// The expanded text, or a message naming the variable (never the
    /// surrounding value, which may be a secret).
    static func expand(_ text: String, environment: [String: String]) -> Result<String, ProblemMessage> {
        // Fast path: most values contain no "$" at all.
        guard text.contains("$") else { return .success(text) }
        var output = ""
        var index = text.startIndex
        while index < text.endIndex {
            let char = text[index]
            let next = text.index(after: index)
            guard char == "$", next < text.endIndex else {
                output.append(char)
                index = next
                continue
            }
            if text[next] == "$" {
                output.append("$")
                index = text.index(after: next)
                continue
            }
            guard text[next] == "{" else {
                output.append(char)
                index = next
                continue
            }
            let bodyStart = text.index(after: next)
            guard let close = text[bodyStart...].firstIndex(of: "}") else {
                return .failure(ProblemMessage("unterminated '${' (write '$$' for a literal '$')"))
            }
            let body = text[bodyStart..<close]
            let name: Substring
            let fallback: Substring?
            if let separator = body.range(of: ":-") {
                name = body[..<separator.lowerBound]
                fallback = body[separator.upperBound...]
            } else {
                name = body
                fallback = nil
            }
            guard isValidName(name) else {
                return .failure(ProblemMessage(
                    "invalid variable name in '${...}': use letters, digits and '_', not starting with a digit"))
            }
            if let value = environment[String(name)], !value.isEmpty {
                output += value
            } else if let fallback {
                output += fallback
            } else if environment[String(name)] == nil {
                return .failure(ProblemMessage(
                    "environment variable \(name) is not set (use ${\(name):-default} to give a default)"))
            }
            // Set but empty without a default expands to "" (as in the shell);
            // required values then fail their own "is empty" checks.
            index = text.index(after: close)
        }
        return .success(output)
    }

    /// `[A-Za-z_][A-Za-z0-9_]*`
    static func isValidName(_ name: Substring) -> Bool {
        guard let first = name.unicodeScalars.first, first.isASCII,
              first == "_" || (first.properties.isAlphabetic)
        else { return false }
        return name.unicodeScalars.allSatisfy { $0.isASCII && ($0 == "_" || $0.properties.isAlphabetic || ($0 >= "0" && $0 <= "9")) }
    }
}
