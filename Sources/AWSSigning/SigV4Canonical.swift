import HTTP1

/// The canonical request of Signature Version 4: method, canonical URI, canonical query,
/// canonical headers, signed header names and the payload hash, each on its line.
///
/// Paths: services other than S3 normalize the path (dot segments removed, runs of slashes
/// kept as the SDKs keep them) and encode it twice (each segment's escapes escaped again);
/// S3 neither normalizes nor encodes twice (`normalizePath: false`).
///
/// Written as bytes into one buffer (``appendStart(_:method:path:query:normalizePath:)``,
/// ``appendHeader(_:name:values:)``, ``appendEnd(_:signedHeaders:payloadHash:)``): the proxy
/// signs every request of a `sigv4` route this way; ``request(method:path:query:headers:signedHeaders:payloadHash:normalizePath:)``
/// is the same over Strings.
public enum SigV4Canonical {
    /// The canonical request for a request with `method`, raw `path` (as sent, escapes included)
    /// and raw `query` (after the `?`, nil when none), `headers` (name and value as sent; only
    /// those named in `signedHeaders`, lowercase and sorted, are signed) and `payloadHash`.
    public static func request(method: String, path: String, query: String?, headers: [(name: String, value: String)],
                               signedHeaders: [String], payloadHash: String, normalizePath: Bool) -> String {
        var out: [UInt8] = []
        appendStart(&out, method: method, path: Substring(path), query: query.map { Substring($0) }, normalizePath: normalizePath)
        for name in signedHeaders {
            appendHeader(&out, name: name, values: headers.lazy.filter { $0.name.lowercased() == name }.map { Array($0.value.utf8) })
        }
        appendEnd(&out, signedHeaders: signedHeaders, payloadHash: payloadHash)
        return String(decoding: out, as: UTF8.self)
    }

    /// The first three lines: method, canonical URI and canonical query, each ended by `\n`.
    public static func appendStart(_ out: inout [UInt8], method: String, path: Substring, query: Substring?, normalizePath: Bool) {
        out.append(contentsOf: method.utf8)
        out.append(0x0A)
        appendURI(&out, path, normalize: normalizePath)
        out.append(0x0A)
        if let query, !query.isEmpty { appendQuery(&out, Array(query.utf8)) }
        out.append(0x0A)
    }

    /// One canonical header line: `name:` then each value trimmed (runs of whitespace made one
    /// space), several joined by `,`, then `\n`.
    public static func appendHeader<Values: Sequence>(_ out: inout [UInt8], name: String, values: Values)
    where Values.Element: Collection<UInt8> {
        out.append(contentsOf: name.utf8)
        out.append(0x3A)
        var first = true
        for value in values {
            if !first { out.append(0x2C) }
            first = false
            appendTrimmed(&out, value)
        }
        out.append(0x0A)
    }

    /// A canonical header line for a value the signer sets itself (a host, a timestamp, a
    /// session token, a hash): nothing in it to trim.
    public static func appendHeader(_ out: inout [UInt8], name: String, value: String) {
        out.append(contentsOf: name.utf8)
        out.append(0x3A)
        out.append(contentsOf: value.utf8)
        out.append(0x0A)
    }

    /// The last lines: the blank line after the headers' block, the signed names joined by `;`,
    /// and the payload hash.
    public static func appendEnd(_ out: inout [UInt8], signedHeaders: [String], payloadHash: String) {
        out.append(0x0A)
        for (index, name) in signedHeaders.enumerated() {
            if index > 0 { out.append(0x3B) }
            out.append(contentsOf: name.utf8)
        }
        out.append(0x0A)
        out.append(contentsOf: payloadHash.utf8)
    }

    /// The canonical URI: for S3 (`normalize: false`) the path with each byte outside the
    /// unreserved set and `/` percent-encoded, escapes kept as they are; otherwise the path with
    /// dot segments removed and each segment encoded again (so `%20` becomes `%2520`).
    public static func uri(_ path: String, normalize: Bool) -> String {
        var out: [UInt8] = []
        appendURI(&out, Substring(path), normalize: normalize)
        return String(decoding: out, as: UTF8.self)
    }

    /// Appends the canonical URI of `path`; `shortcut: false` (tests) always normalizes and
    /// encodes segment by segment.
    static func appendURI(_ out: inout [UInt8], _ path: Substring, normalize: Bool, shortcut: Bool = true) {
        let raw = path.isEmpty ? "/" : path
        guard normalize else { return encode(raw.utf8, into: &out, keepSlash: true, keepEscapes: true) }
        // A path with nothing to normalize (it starts with `/`, has no empty, `.` or `..`
        // segment) encodes segment by segment as it does whole, its slashes kept.
        if shortcut && isNormal(raw.utf8) { return encode(raw.utf8, into: &out, keepSlash: true, keepEscapes: false) }
        let segments = removeDotSegments(String(raw)).split(separator: "/", omittingEmptySubsequences: false)
        let start = out.count
        for (index, segment) in segments.enumerated() {
            if index > 0 { out.append(0x2F) }
            encode(segment.utf8, into: &out, keepSlash: false, keepEscapes: false)
        }
        if out.count == start { out.append(0x2F) }
    }

    /// Whether `path` is already what ``removeDotSegments(_:)`` makes of it: it starts with `/`
    /// and has no empty segment (`//`) and no `.` or `..` segment.
    static func isNormal(_ path: Substring.UTF8View) -> Bool {
        guard path.first == 0x2F else { return false }
        var length = 0, onlyDots = true
        for byte in path.dropFirst() {
            if byte == 0x2F {
                if length == 0 || (onlyDots && length <= 2) { return false }
                length = 0
                onlyDots = true
            } else {
                length += 1
                if byte != 0x2E { onlyDots = false }
            }
        }
        // The last segment may be empty (a trailing slash), not `.` or `..`.
        return length == 0 || !onlyDots || length > 2
    }

    /// The SDKs' path normalization: `.` and `..` segments removed (RFC 3986 §5.2.4) and empty
    /// segments dropped (`//example//` is `/example/`), a trailing slash kept.
    static func removeDotSegments(_ path: String) -> String {
        var output: [Substring] = []
        let segments = path.split(separator: "/", omittingEmptySubsequences: false)
        var trailingSlash = path.hasSuffix("/")
        for (index, segment) in segments.enumerated() {
            let last = index == segments.count - 1
            switch segment {
            case "", ".":
                if last, !output.isEmpty { trailingSlash = true }
            case "..":
                if !output.isEmpty { output.removeLast() }
                if last { trailingSlash = true }
            default:
                output.append(segment)
            }
        }
        let joined = "/" + output.joined(separator: "/")
        return trailingSlash && !output.isEmpty ? joined + "/" : joined
    }

    /// The canonical query: every `name=value` pair decoded (escapes, not `+`) and encoded with
    /// the strict SigV4 set, sorted by name, then value; a name without `=` has an empty value.
    public static func canonicalQuery(_ query: String) -> String {
        var out: [UInt8] = []
        appendQuery(&out, Array(query.utf8))
        return String(decoding: out, as: UTF8.self)
    }

    static func appendQuery(_ out: inout [UInt8], _ query: [UInt8]) {
        var pairs: [(name: [UInt8], value: [UInt8])] = []
        for part in query.split(separator: 0x26) {
            let equals = part.firstIndex(of: 0x3D)
            var name: [UInt8] = [], value: [UInt8] = []
            encode(decodedText(part[..<(equals ?? part.endIndex)]), into: &name, keepSlash: false, keepEscapes: false)
            if let equals { encode(decodedText(part[(equals + 1)...]), into: &value, keepSlash: false, keepEscapes: false) }
            pairs.append((name, value))
        }
        // Encoded, every byte is ASCII: byte order is the order AWS sorts by.
        if pairs.count > 1 {
            pairs.sort { $0.name == $1.name ? $0.value.lexicographicallyPrecedes($1.value) : $0.name.lexicographicallyPrecedes($1.name) }
        }
        for (index, pair) in pairs.enumerated() {
            if index > 0 { out.append(0x26) }
            out.append(contentsOf: pair.name)
            out.append(0x3D)
            out.append(contentsOf: pair.value)
        }
    }

    /// Percent-decoded bytes, invalid UTF-8 replaced by U+FFFD as the SDKs' strings would have it.
    private static func decodedText(_ bytes: ArraySlice<UInt8>) -> [UInt8] {
        let decoded = PercentDecoding.decodedBytes(bytes)
        guard decoded.contains(where: { $0 >= 0x80 }) else { return decoded }
        return Array(String(decoding: decoded, as: UTF8.self).utf8)
    }

    /// Appends `value` without surrounding whitespace, runs of spaces, tabs and line breaks made one space.
    static func appendTrimmed<Bytes: Collection<UInt8>>(_ out: inout [UInt8], _ value: Bytes) {
        let start = out.count
        var pendingSpace = false
        for byte in value {
            if byte == 0x20 || byte == 0x09 || byte == 0x0D || byte == 0x0A {
                pendingSpace = out.count > start
            } else {
                if pendingSpace { out.append(0x20) }
                pendingSpace = false
                out.append(byte)
            }
        }
    }

    /// SigV4's URI encoding, appended: every byte but `A-Z a-z 0-9 - . _ ~` (and `/` with
    /// `keepSlash`) as `%XY` uppercase; with `keepEscapes`, an existing `%XY` escape is kept as it is.
    static func encode<Bytes: Collection<UInt8>>(_ text: Bytes, into out: inout [UInt8], keepSlash: Bool, keepEscapes: Bool) {
        out.reserveCapacity(out.count + text.count)
        var index = text.startIndex
        while index != text.endIndex {
            let byte = text[index]
            if PercentDecoding.isUnreserved(byte) || (keepSlash && byte == 0x2F) {
                out.append(byte)
            } else if keepEscapes, byte == 0x25, let first = text.index(index, offsetBy: 1, limitedBy: text.endIndex), first != text.endIndex,
                      let second = text.index(first, offsetBy: 1, limitedBy: text.endIndex), second != text.endIndex,
                      PercentDecoding.hexValue(text[first]) != nil, PercentDecoding.hexValue(text[second]) != nil {
                out.append(0x25)
                out.append(upperHex(text[first]))
                out.append(upperHex(text[second]))
                index = text.index(after: second)
                continue
            } else {
                out.append(0x25)
                out.append(hexDigits[Int(byte >> 4)])
                out.append(hexDigits[Int(byte & 0x0F)])
            }
            index = text.index(after: index)
        }
    }

    private static let hexDigits = Array("0123456789ABCDEF".utf8)

    private static func upperHex(_ byte: UInt8) -> UInt8 { byte >= 0x61 && byte <= 0x66 ? byte - 0x20 : byte }
}
