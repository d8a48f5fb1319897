/// ASCII case-insensitive field-name helpers used when rewriting heads.
enum FieldNames {
    /// Fields that describe one connection and are never forwarded as they are (RFC 9110 §7.6.1),
    /// plus `Transfer-Encoding`, which the proxy re-frames itself.
    static let hopByHop: [String] = [
        "connection", "keep-alive", "proxy-connection", "proxy-authorization", "proxy-authenticate",
        "te", "trailer", "transfer-encoding", "upgrade",
    ]

    /// Whether `name` equals `lowercase` ignoring ASCII case. `lowercase` must be lowercase.
    @inline(__always)
    static func equal(_ name: String, _ lowercase: String) -> Bool {
        var a = name.utf8.makeIterator()
        var b = lowercase.utf8.makeIterator()
        while true {
            switch (a.next(), b.next()) {
            case (nil, nil): return true
            case (let x?, let y?):
                let folded = (x >= 0x41 && x <= 0x5a) ? x | 0x20 : x
                if folded != y { return false }
            default: return false
            }
        }
    }

    /// Whether `name` is in `lowercaseNames`.
    static func contains(_ lowercaseNames: [String], _ name: String) -> Bool {
        for candidate in lowercaseNames where equal(name, candidate) { return true }
        return false
    }
}
