import EventLoop

/// Why a token request got no complete HTTP response.
public enum TokenTransportError: Error, Sendable, Equatable, CustomStringConvertible {
    /// No TLS connection could be made for an `https` endpoint (TLS origination is not wired in).
    case tlsUnavailable
    /// The connection object could not be created at all.
    case couldNotConnect
    /// The connection failed or ended early (DNS failure, refused, socket error, closed mid-response).
    case connection(ConnectionEnd)
    /// No complete response within the fetch timeout.
    case timeout(Duration)
    /// The response violated HTTP/1.1; the message says how (never contains response bytes).
    case malformedResponse(String)
    /// The body exceeded the limit (bytes).
    case bodyTooLarge(limit: Int)

    /// A message for logs and people (never contains payload bytes).
    public var description: String {
        switch self {
        case .tlsUnavailable: return "https token endpoints need TLS support (no TLS connection could be created)"
        case .couldNotConnect: return "could not create a connection to the token endpoint"
        case .connection(.endOfStream): return "the token endpoint closed the connection before the response was complete"
        case .connection(let end): return "token endpoint connection failed: \(end)"
        case .timeout(let limit): return "no complete response from the token endpoint within \(limit)"
        case .malformedResponse(let why): return "malformed response from the token endpoint: \(why)"
        case .bodyTooLarge(let limit): return "token endpoint response body larger than \(limit) bytes"
        }
    }
}
