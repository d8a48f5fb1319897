import EventLoop
import HTTP1

/// Interception: a CONNECT to an intercepting route's host is answered `200`, then the app's
/// first byte decides what the tunnel carries: a TLS handshake record (`0x16`, a ClientHello)
/// and the same socket continues as the TLS server for that name (a leaf minted by the
/// sidecar's CA); anything else is plaintext HTTP/1.1 (a `ws://` or `http://` URL behind an HTTP
/// proxy, RFC 6455 §4.1). Either way a new session reads the requests, which must all be for
/// that origin.
extension ClientSession {
    /// Sent before the TLS handshake (RFC 9110 §9.3.6: any 2xx; the reason phrase is customary).
    private static let established = Array("HTTP/1.1 200 Connection established\r\n\r\n".utf8)

    /// Answers the CONNECT and arranges for TLS to start once the answer is with the kernel.
    func startInterception(_ head: RequestHead, _ authority: Authority, _ interception: Interception) {
        let origin = InterceptedOrigin(authority)
        let server: TLSServerContext
        do {
            server = try interception.serverContext(for: origin.host, logger: context.logger)
        } catch {
            context.logger.error("cannot mint a certificate for an intercepted host",
                                 metadata: ["host": .string(origin.host), "error": "\(error)"])
            refuse(ProxyError(status: 502, type: "proxy_internal_error",
                              message: "no certificate could be made for \(origin.description)"),
                   head: head, connect: true)
            return
        }
        guard client.input.isEmpty else {
            // TLS bytes sent before the tunnel was established: nothing safe to do with them.
            refuse(.badRequest("bytes arrived after the CONNECT head before the tunnel was established"), head: head, connect: true)
            return
        }
        perform(connection.connectIntercepted(ClientConnectionStateMachine.InterceptedTunnel(
            origin: origin, server: server, acceptsTLS: context.router.interceptsOverTLS(authority))))
        // A client that does not take the answer does not hold the connection.
        client.setTimeouts(read: nil, write: context.timeouts.clientHeader)
        client.write(Self.established)
    }

    /// The `200` is with the kernel: the app's first byte (left unread) says what the tunnel
    /// carries. It must come within `clientHeader`, like a request head.
    func awaitFirstByte() {
        client.setTimeouts(read: context.timeouts.clientHeader, write: context.timeouts.clientHeader)
        let waiting = client.peekFirstByte { [self] byte in perform(connection.firstByte(byte)) }
        if !waiting { abort() }
    }

    /// The app speaks TLS in the tunnel: the socket continues as the TLS server for its origin,
    /// in a new session.
    func continueAsTLS(_ tunnel: ClientConnectionStateMachine.InterceptedTunnel) {
        guard let tls = client.startTLSServer(context: tunnel.server) else {
            abort()
            return
        }
        // Adopt first: a drain must never see a moment with neither session.
        context.adopt(tls, intercepted: tunnel.origin)
        context.remove(self)
    }

    /// The app speaks plaintext HTTP in the tunnel: a new session for its origin reads the same
    /// stream (and takes its delegate).
    func continueAsPlaintext(_ tunnel: ClientConnectionStateMachine.InterceptedTunnel) {
        client.setTimeouts(read: nil, write: nil)
        context.adopt(client, intercepted: tunnel.origin, pendingInput: true)
        context.remove(self)
    }

    /// The app speaks TLS where the route sends plaintext upstream: refused.
    func refuseTLS(_ tunnel: ClientConnectionStateMachine.InterceptedTunnel) {
        context.logger.warning("an app spoke TLS in a tunnel whose route sends plaintext (http:// upstream); closed",
                               metadata: ["host": .string(tunnel.origin.host)])
        abort()
    }

    /// The TLS handshake with the app completed.
    func connectionDidConnect(_ stream: any ByteStream) {
        // The app chose HTTP/2 (ALPN `h2`): the connection goes on as HTTP/2.
        if client.tlsApplicationProtocol == "h2" {
            continueAsHTTP2()
            return
        }
        // From now on the idle timeout, as on any connection.
        perform(connection.handshakeCompleted(draining: context.draining, inputEmpty: client.input.isEmpty))
    }
}
