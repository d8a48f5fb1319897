/// How the end of a message body is determined (RFC 9112 §6.3).
public enum BodyFraming: Sendable, Equatable, Hashable {
    /// The message has no body.
    case none
    /// Exactly this many body bytes follow the head (may be 0).
    case contentLength(UInt64)
    /// The body uses the chunked transfer coding (see ``ChunkedDecoder``).
    case chunked
    /// The body extends until the server closes the connection (responses only).
    case untilClose
}
