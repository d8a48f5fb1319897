import HTTP1

/// The request-head fuzz check. Properties that must hold for any input:
/// - the scanner finds the same head (or the same need for more, or fails alike) whether the
///   bytes arrive at once or a few at a time;
/// - a head the parser accepts, serialized again, is accepted again and serializes to the
///   same bytes, with the same framing, persistence and `Expect`: the codec never forwards
///   something it would itself read differently.
public enum RequestHeadCheck {
    /// The head size limit the proxy uses by default.
    static let limit = 65536

    /// The violated properties (empty when all hold).
    public static func run(_ input: FuzzInput) -> [String] {
        var problems: [String] = []
        let whole = HeadOutcome.scanWhole(input.message, limit: limit)
        let incremental = HeadOutcome.scanIncrementally(input.message, prefixes: input.prefixLengths, limit: limit)
        if whole != incremental {
            problems.append("scanner: whole input gives \(whole), reads of \(input.readSize) give \(incremental)")
        }
        guard case .complete(let length) = whole else { return problems }
        guard let first = parse(Array(input.message[0..<length])) else { return problems }
        let bytes = serialize(first)
        guard let second = parse(bytes) else {
            problems.append("re-serialized head is rejected: \(printable(bytes))")
            return problems
        }
        if serialize(second) != bytes { problems.append("serialization is not stable: \(printable(bytes))") }
        if first.framing != second.framing { problems.append("framing changed: \(first.framing) → \(second.framing)") }
        if first.keepAlive != second.keepAlive { problems.append("keep-alive changed") }
        if first.expectsContinue != second.expectsContinue { problems.append("Expect changed") }
        if first.method != second.method || first.target != second.target { problems.append("request line changed") }
        return problems
    }

    static func parse(_ head: [UInt8]) -> RequestHead? {
        head.withUnsafeBytes { buffer in try? RequestHeadParser.parse(buffer) }
    }

    /// The head as a proxy writes it: the request line with the target as received.
    static func serialize(_ head: RequestHead) -> [UInt8] {
        HeadSerializer.request(method: head.method, target: targetString(head.target), version: head.version,
                               fields: head.fields)
    }

    static func targetString(_ target: RequestTarget) -> String {
        switch target {
        case .origin(let path): return path
        case .absolute(let scheme, let authority, let path): return "\(scheme)://\(authority)\(path)"
        case .authority(let authority): return authority.description
        case .asterisk: return "*"
        }
    }
}

/// Bytes as text for a failure message, control bytes escaped.
func printable(_ bytes: [UInt8]) -> String {
    String(bytes.prefix(300).map { b -> String in
        switch b {
        case 0x0D: return "\\r"
        case 0x0A: return "\\n"
        case 0x20...0x7E: return String(UnicodeScalar(b))
        default: return "\\x" + String(b, radix: 16)
        }
    }.joined())
}
