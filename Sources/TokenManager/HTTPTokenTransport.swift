import Crypto
import EventLoop

/// Sends token requests over the project's own HTTP/1.1 codec on an ``EventLoop``: one
/// connection per fetch (`Connection: close`), any response framing, a bounded body and an
/// overall timeout.
public final class HTTPTokenTransport: TokenTransport {
    /// The loop that owns every connection this transport makes; use only on its thread.
    public let loop: EventLoop
    /// The limit for one whole fetch: connect, send, complete response.
    public let timeout: Duration
    /// The largest accepted response body.
    public let maxBodyBytes: Int
    private let connector: TokenConnector

    /// Creates a transport.
    /// - Parameters:
    ///   - loop: the token loop; ``send(_:completion:)`` must be called on its thread.
    ///   - timeout: overall limit per fetch (default 10 s).
    ///   - maxBodyBytes: response body limit (default 1 MiB).
    ///   - connector: opens connections; the default handles `http` only (see ``plainConnector(host:port:tls:identity:loop:delegate:)``).
    public init(loop: EventLoop, timeout: Duration = .seconds(10), maxBodyBytes: Int = 1 << 20,
                connector: @escaping TokenConnector = HTTPTokenTransport.plainConnector) {
        self.loop = loop
        self.timeout = timeout
        self.maxBodyBytes = maxBodyBytes
        self.connector = connector
    }

    /// The default connector: plain TCP through ``Connection/connect(host:port:on:delegate:)``
    /// (asynchronous DNS); returns nil for TLS, which the transport reports as
    /// ``TokenTransportError/tlsUnavailable``.
    public static func plainConnector(host: String, port: Int, tls: Bool, identity: ClientIdentity?, loop: EventLoop,
                                      delegate: any ConnectionDelegate) -> (any ByteStream)? {
        if tls { return nil }
        return Connection.connect(host: host, port: port, on: loop, delegate: delegate)
    }

    /// Sends `request`; `completion` runs once on ``loop``, never inside this call.
    public func send(_ request: TokenEndpointRequest,
                     completion: @escaping (Result<TokenHTTPResponse, TokenTransportError>) -> Void) {
        let call = TokenHTTPCall(maxBodyBytes: maxBodyBytes, requestMethod: request.method, completion: completion)
        let endpoint = request.endpoint
        guard let connection = connector(endpoint.host, endpoint.port, endpoint.isTLS, request.binding?.certificate, loop, call) else {
            let error: TokenTransportError = endpoint.isTLS ? .tlsUnavailable : .couldNotConnect
            call.failLater(error, on: loop)
            return
        }
        call.start(connection: connection, request: request.bytes, timeout: timeout, on: loop)
    }
}
