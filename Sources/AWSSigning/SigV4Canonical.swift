import HTTP1

/// The canonical request of Signature Version 4: method, canonical URI, canonical query,
/// canonical headers, signed header names and the payload hash, each on its line.
///
/// Paths: services other than S3 normalize the path (dot segments removed, runs of slashes
/// kept as the SDKs keep them) and encode it twice (each segment's escapes escaped again);
/// S3 neither normalizes nor encodes twice (`normalizePath: false`).
public enum SigV4Canonical {
    /// The canonical request for a request with `method`, raw `path` (as sent, escapes included)
    /// and raw `query` (after the `?`, nil when none), `headers` (name and value as sent; only
    /// those named in `signedHeaders`, lowercase and sorted, are signed) and `payloadHash`.
    public static func request(method: String, path: String, query: String?, headers: [(name: String, value: String)],
                               signedHeaders: [String], payloadHash: String, normalizePath: Bool) -> String {
        var lines: [String] = [method, uri(path, normalize: normalizePath), canonicalQuery(query ?? "")]
        lines.append(canonicalHeaders(headers, signed: signedHeaders))
        lines.append(signedHeaders.joined(separator: ";"))
        lines.append(payloadHash)
        return lines.joined(separator: "\n")
    }

    /// The canonical URI: for S3 (`normalize: false`) the path with each byte outside the
    /// unreserved set and `/` percent-encoded, escapes kept as they are; otherwise the path with
    /// dot segments removed and each segment encoded again (so `%20` becomes `%2520`).
    public static func uri(_ path: String, normalize: Bool) -> String {
        let raw = path.isEmpty ? "/" : path
        guard normalize else { return encode(raw, keepSlash: true, keepEscapes: true) }
        let decodedSegments = removeDotSegments(raw).split(separator: "/", omittingEmptySubsequences: false)
        // Each segment as sent, its escapes escaped again (the SDKs encode the already encoded path).
        let encoded = decodedSegments.map { encode(String($0), keepSlash: false, keepEscapes: false) }
        let joined = encoded.joined(separator: "/")
        return joined.isEmpty ? "/" : joined
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
        guard !query.isEmpty else { return "" }
        var pairs: [(String, String)] = []
        for part in query.split(separator: "&", omittingEmptySubsequences: true) {
            let pieces = part.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            let name = encode(PercentDecoding.decode(pieces[0]), keepSlash: false, keepEscapes: false)
            let value = pieces.count > 1 ? encode(PercentDecoding.decode(pieces[1]), keepSlash: false, keepEscapes: false) : ""
            pairs.append((name, value))
        }
        pairs.sort { $0.0 == $1.0 ? $0.1 < $1.1 : $0.0 < $1.0 }
        return pairs.map { "\($0.0)=\($0.1)" }.joined(separator: "&")
    }

    /// `name:value` lines of the signed headers, sorted: names lowercase, values trimmed with
    /// runs of spaces (a folded line's too) made one, several fields of a name joined by `,`.
    public static func canonicalHeaders(_ headers: [(name: String, value: String)], signed: [String]) -> String {
        var values: [String: [String]] = [:]
        for header in headers {
            let name = header.name.lowercased()
            guard signed.contains(name) else { continue }
            values[name, default: []].append(trimmed(header.value))
        }
        return signed.map { "\($0):\((values[$0] ?? []).joined(separator: ","))\n" }.joined()
    }

    /// A value without surrounding whitespace, runs of spaces, tabs and line breaks made one space.
    static func trimmed(_ value: String) -> String {
        var out: [UInt8] = []
        var pendingSpace = false
        for byte in value.utf8 {
            if byte == 0x20 || byte == 0x09 || byte == 0x0D || byte == 0x0A {
                pendingSpace = !out.isEmpty
            } else {
                if pendingSpace { out.append(0x20) }
                pendingSpace = false
                out.append(byte)
            }
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// SigV4's URI encoding: every byte but `A-Z a-z 0-9 - . _ ~` (and `/` with `keepSlash`) as
    /// `%XY` uppercase; with `keepEscapes`, an existing `%XY` escape is kept as it is.
    static func encode(_ text: String, keepSlash: Bool, keepEscapes: Bool) -> String {
        let bytes = Array(text.utf8)
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count)
        var index = 0
        while index < bytes.count {
            let byte = bytes[index]
            if PercentDecoding.isUnreserved(byte) || (keepSlash && byte == 0x2F) {
                out.append(byte)
            } else if keepEscapes, byte == 0x25, index + 2 < bytes.count, PercentDecoding.hexValue(bytes[index + 1]) != nil, PercentDecoding.hexValue(bytes[index + 2]) != nil {
                out.append(contentsOf: [0x25, upperHex(bytes[index + 1]), upperHex(bytes[index + 2])])
                index += 3
                continue
            } else {
                out.append(0x25)
                out.append(hexDigits[Int(byte >> 4)])
                out.append(hexDigits[Int(byte & 0x0F)])
            }
            index += 1
        }
        return String(decoding: out, as: UTF8.self)
    }

    private static let hexDigits = Array("0123456789ABCDEF".utf8)


    private static func upperHex(_ byte: UInt8) -> UInt8 { byte >= 0x61 && byte <= 0x66 ? byte - 0x20 : byte }
}
