import HTTP1

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

    /// Whether `name` is in `lowercaseNames`. Compares lengths first: most fields of a request
    /// are not hop-by-hop, and a length check rejects them without looking at a byte.
    static func contains(_ lowercaseNames: [String], _ name: String) -> Bool {
        let length = name.utf8.count
        for candidate in lowercaseNames where candidate.utf8.count == length && equal(name, candidate) { return true }
        return false
    }

    /// Whether any `Via` field of `fields` names token-sidecar (a forwarding loop). A byte scan:
    /// `String.contains` goes through Foundation here and costs more than the whole request.
    static func viaMentionsSidecar(_ fields: HTTPFields) -> Bool {
        let needle = Array("token-sidecar".utf8)
        for field in fields where field.name.utf8.count == 3 && equal(field.name, "via") {
            let bytes = Array(field.value.utf8)
            guard bytes.count >= needle.count else { continue }
            for start in 0...(bytes.count - needle.count) where bytes[start] == needle[0] {
                if Array(bytes[start..<start + needle.count]) == needle { return true }
            }
        }
        return false
    }
}
