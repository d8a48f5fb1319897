extension SidecarConfig {
    /// The `sharedCache:` lines of ``renderEffective()``: file paths only, never their contents.
    func renderSharedCache() -> [String] {
        guard let cache = sharedCache else { return ["sharedCache: null  # tokens are fetched per process"] }
        var lines = [
            "sharedCache:",
            "  url: \(Self.quote(cache.url.description))",
        ]
        lines += Self.tlsLines(cache.tls, indent: "  ", isTLS: cache.url.isTLS)
        lines.append("  passwordFile: " + (cache.passwordFile.map(Self.quote) ?? "null  # no AUTH"))
        lines.append("  usernameFile: " + (cache.usernameFile.map(Self.quote) ?? "null  # the default user"))
        lines.append("  encryptionKeyFile: \(Self.quote(cache.encryptionKeyFile))")
        lines.append("  keyPrefix: \(Self.quote(cache.keyPrefix))")
        lines.append("  timeout: \(DurationText.format(cache.timeout))")
        return lines
    }
}
