/// One RESP2 reply from Redis.
public enum RESPValue: Sendable, Equatable {
    /// `+OK` — a status line.
    case simpleString(String)
    /// `-ERR …` — an error reply (the command failed; the connection is fine).
    case error(String)
    /// `:42`.
    case integer(Int64)
    /// `$n` bytes, binary-safe; nil for the null bulk string `$-1` (a missing key).
    case bulkString([UInt8]?)
    /// `*n` replies; nil for the null array `*-1`.
    case array([RESPValue]?)

    /// Whether this is the null bulk string or the null array.
    public var isNull: Bool {
        switch self {
        case .bulkString(nil), .array(nil): return true
        default: return false
        }
    }
}
