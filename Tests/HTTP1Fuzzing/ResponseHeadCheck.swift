import HTTP1

/// The response-head fuzz check: the scanner is split-independent, the zero-copy view and
/// the full parse agree, and an accepted head re-serializes to a stable, equally framed head.
/// The selector byte also picks the method of the request being answered (framing depends on
/// it: HEAD and CONNECT change what a 2xx means).
public enum ResponseHeadCheck {
    static let methods = ["GET", "HEAD", "CONNECT", "POST"]

    /// The violated properties (empty when all hold).
    public static func run(_ input: FuzzInput) -> [String] {
        var problems: [String] = []
        let method = methods[Int(input.selector >> 4) % methods.count]
        let whole = HeadOutcome.scanWhole(input.message, limit: RequestHeadCheck.limit)
        let incremental = HeadOutcome.scanIncrementally(input.message, prefixes: input.prefixLengths,
                                                        limit: RequestHeadCheck.limit)
        if whole != incremental {
            problems.append("scanner: whole input gives \(whole), reads of \(input.readSize) give \(incremental)")
        }
        guard case .complete(let length) = whole else { return problems }
        let head = Array(input.message[0..<length])
        let viaView: ResponseHead? = head.withUnsafeBytes { buffer in
            try? ResponseHeadParser.view(buffer, requestMethod: method).resolved()
        }
        guard let first = parse(head, method: method) else {
            if viaView != nil { problems.append("view accepts what parse rejects") }
            return problems
        }
        if let viaView {
            if viaView.status != first.status || viaView.framing != first.framing || viaView.fields != first.fields
                || viaView.keepAlive != first.keepAlive {
                problems.append("view and parse disagree")
            }
        } else {
            problems.append("parse accepts what view rejects")
        }
        let bytes = serialize(first)
        guard let second = parse(bytes, method: method) else {
            problems.append("re-serialized head is rejected: \(printable(bytes))")
            return problems
        }
        if serialize(second) != bytes { problems.append("serialization is not stable: \(printable(bytes))") }
        if first.framing != second.framing { problems.append("framing changed: \(first.framing) → \(second.framing)") }
        if first.keepAlive != second.keepAlive { problems.append("keep-alive changed") }
        if first.status != second.status { problems.append("status changed") }
        return problems
    }

    static func parse(_ head: [UInt8], method: String) -> ResponseHead? {
        head.withUnsafeBytes { buffer in try? ResponseHeadParser.parse(buffer, requestMethod: method) }
    }

    static func serialize(_ head: ResponseHead) -> [UInt8] {
        HeadSerializer.response(version: head.version, status: head.status, reason: head.reason, fields: head.fields)
    }
}
