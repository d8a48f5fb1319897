/// Makes server-provided text safe to put in a log line.
enum LogSafeText {
    /// Keeps only `[A-Za-z0-9_.-]`, at most 64 characters (OAuth error codes, token types).
    static func code(_ text: String) -> String {
        String(String.UnicodeScalarView(text.unicodeScalars.filter {
            $0.isASCII && (($0.properties.isAlphabetic) || ("0"..."9").contains($0) || $0 == "_" || $0 == "." || $0 == "-")
        }.prefix(64)))
    }

    /// Printable ASCII only (others become `?`), at most `limit` characters, with `…` when cut.
    static func sentence(_ text: String, limit: Int = 200) -> String {
        var out = ""
        for scalar in text.unicodeScalars {
            if out.unicodeScalars.count >= limit { return out + "…" }
            out.unicodeScalars.append((0x20...0x7E).contains(scalar.value) ? scalar : "?")
        }
        return out
    }
}
