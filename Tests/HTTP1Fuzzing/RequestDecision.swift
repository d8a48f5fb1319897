import HTTP1

/// How `HTTP1` frames one request, in terms an independent parser can be compared on:
/// accepted or not, method, target, body framing, and where the message ends.
public struct RequestDecision: Equatable, Sendable {
    /// The head (and, when chunked, the body framing) was accepted.
    public var accepted: Bool
    /// The method, when accepted.
    public var method: String?
    /// The request target as written on the request line, when accepted.
    public var target: String?
    /// `none`, `length N` or `chunked`, when accepted.
    public var body: String?
    /// The offset just past the message (head and body), when the input holds all of it.
    public var end: Int?
    /// Why it was rejected.
    public var reason: String?

    /// Decides for a message given whole.
    public init(_ message: [UInt8]) {
        accepted = false
        switch HeadOutcome.scanWhole(message, limit: RequestHeadCheck.limit) {
        case .needMore:
            reason = "incomplete head"
            return
        case .failed(let why):
            reason = why
            return
        case .complete(let length):
            let parsed: Result<RequestHead, HTTPParseError> = message[0..<length].withUnsafeBytes { buffer in
                Result { () throws(HTTPParseError) in try RequestHeadParser.parse(buffer) }
            }
            let head: RequestHead
            switch parsed {
            case .success(let value): head = value
            case .failure(let error):
                reason = String(describing: error)
                return
            }
            method = head.method
            target = RequestHeadCheck.targetString(head.target)
            switch head.framing {
            case .none, .contentLength(0):
                body = "none"
                end = length
            case .contentLength(let n):
                body = "length \(n)"
                end = UInt64(message.count - length) >= n ? length + Int(n) : nil
            case .chunked:
                body = "chunked"
                let decoded = ChunkedCheck.decode(Array(message[length...]), prefixes: [message.count - length])
                if decoded.failed {
                    reason = "chunked body rejected"
                    return
                }
                end = decoded.trailers == nil ? nil : length + decoded.consumed
            case .untilClose:
                body = "until close"
            }
            accepted = true
        }
    }
}
