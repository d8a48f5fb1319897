/// The HTTP protocol version of a message. Only HTTP/1.0 and HTTP/1.1 are supported
/// (RFC 9112 §2.3); anything else is rejected by the parsers.
public enum HTTPVersion: Sendable, Equatable, Hashable, CustomStringConvertible {
    /// `HTTP/1.0`
    case http1_0
    /// `HTTP/1.1`
    case http1_1

    /// The on-the-wire spelling: `"HTTP/1.0"` or `"HTTP/1.1"`.
    public var description: String {
        switch self {
        case .http1_0: return "HTTP/1.0"
        case .http1_1: return "HTTP/1.1"
        }
    }

    /// Parses exactly the 8 bytes `HTTP/1.0` or `HTTP/1.1` (case-sensitive, RFC 9112 §2.3)
    /// at `range` of `buf`; nil for anything else (e.g. `HTTP/2.0`, `http/1.1`, `HTTP/1.10`).
    static func parse(_ buf: UnsafeRawBufferPointer, _ range: Range<Int>) -> HTTPVersion? {
        guard range.count == 8 else { return nil }
        let s = range.lowerBound
        guard buf[s] == 0x48, buf[s + 1] == 0x54, buf[s + 2] == 0x54, buf[s + 3] == 0x50,  // "HTTP"
              buf[s + 4] == 0x2F, buf[s + 5] == 0x31, buf[s + 6] == 0x2E  // "/1."
        else { return nil }
        switch buf[s + 7] {
        case 0x30: return .http1_0
        case 0x31: return .http1_1
        default: return nil
        }
    }
}
