/// Why a connection stopped being usable, as reported to its ``ConnectionDelegate``.
public enum ConnectionEnd: Sendable, Equatable, CustomStringConvertible {
    /// The peer closed its side cleanly (read returned 0).
    case endOfStream
    /// The name could not be resolved; `message` comes from the resolver.
    case dnsFailure(message: String)
    /// The resolver gave up waiting for an answer.
    case dnsTimeout
    /// The connection attempt was actively refused (ECONNREFUSED).
    case refused
    /// A socket error (errno) during connect, read or write.
    case socketError(errno: Int32)
    /// A read or write timeout set on the connection expired.
    case timeout
    /// The TLS handshake failed because the peer's certificate did not verify (untrusted CA,
    /// wrong name, expired); `message` says which.
    case tlsCertificate(message: String)
    /// Any other TLS failure (protocol mismatch, alert, not TLS at all).
    case tlsProtocol(message: String)

    /// A short description for logs (never contains payload bytes).
    public var description: String {
        switch self {
        case .endOfStream: return "end of stream"
        case .dnsFailure(let message): return "DNS failure: \(message)"
        case .dnsTimeout: return "DNS timeout"
        case .refused: return "connection refused"
        case .socketError(let code): return "socket error \(code)"
        case .timeout: return "timeout"
        case .tlsCertificate(let message): return "TLS certificate error: \(message)"
        case .tlsProtocol(let message): return "TLS error: \(message)"
        }
    }
}

/// Receives a connection's events, on the connection's loop thread.
///
/// A connection holds its delegate strongly until ``Connection/close()``, which breaks the cycle.
public protocol ConnectionDelegate: AnyObject {
    /// An outgoing connection finished connecting.
    func connectionDidConnect(_ connection: any ByteStream)
    /// New bytes are in ``Connection/input``.
    func connectionDidRead(_ connection: any ByteStream)
    /// ``Connection/output`` drained to its low watermark (0 by default): the peer is keeping up.
    func connectionDidDrain(_ connection: any ByteStream)
    /// The connection ended or failed. Reading has stopped; the delegate should close it.
    func connection(_ connection: any ByteStream, didEnd reason: ConnectionEnd)
}

extension ConnectionDelegate {
    /// Default: nothing to do.
    public func connectionDidConnect(_ connection: any ByteStream) {}
    /// Default: nothing to do.
    public func connectionDidDrain(_ connection: any ByteStream) {}
}
