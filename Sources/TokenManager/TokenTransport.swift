import Crypto
import EventLoop

/// Sends one token request and delivers the complete response. A seam for tests: the state
/// machine's driver only sees this protocol.
public protocol TokenTransport: AnyObject {
    /// Sends `request`. Called on the token loop; `completion` runs exactly once, on the token
    /// loop, and never synchronously inside `send`.
    func send(_ request: TokenEndpointRequest, completion: @escaping (Result<TokenHTTPResponse, TokenTransportError>) -> Void)
}

/// Opens the connection for a token request: plain TCP, or TLS when `tls` is true (with
/// certificate verification against `host`), presenting `identity` when the request is bound to
/// a client certificate (exactly the one its binding records, so the token is bound to it).
/// Returns nil when no connection can be created; the delegate then hears nothing.
public typealias TokenConnector = (_ host: String, _ port: Int, _ tls: Bool, _ identity: ClientIdentity?, _ loop: EventLoop,
                                   _ delegate: any ConnectionDelegate) -> (any ByteStream)?
