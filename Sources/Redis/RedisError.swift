/// Why a Redis command did not produce a reply. Messages never contain keys' values, passwords
/// or tokens.
public enum RedisError: Error, Sendable, Equatable, CustomStringConvertible {
    /// No connection: refused, closed, or waiting out the reconnect backoff.
    case unavailable(String)
    /// No reply within the operation timeout (the connection is dropped: replies would be out of order).
    case timeout
    /// The server answered with an error reply (`-ERR …`, `-NOAUTH …`).
    case server(String)
    /// The bytes from the server were not RESP2.
    case protocolViolation(String)
    /// The client was closed.
    case closed

    /// A short description for logs.
    public var description: String {
        switch self {
        case .unavailable(let why): return "unavailable: \(why)"
        case .timeout: return "timeout"
        case .server(let message): return "error reply: \(message.prefix(80))"
        case .protocolViolation(let why): return "protocol violation: \(why)"
        case .closed: return "closed"
        }
    }
}
