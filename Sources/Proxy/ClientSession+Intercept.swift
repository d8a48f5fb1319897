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

    /// What waits for the `200` to leave before the socket turns into TLS (a class: the session
    /// checks for one on every drain, and a nil check of a reference costs nothing).
    final class PendingInterception {
        let server: TLSServerContext
        let origin: InterceptedOrigin
        /// The route's upstream is TLS: an app speaking TLS may use it (one speaking plaintext
        /// always may).
        let acceptsTLS: Bool
        /// The `200` left; the app's first byte is awaited.
        var answered = false

        init(server: TLSServerContext, origin: InterceptedOrigin, acceptsTLS: Bool) {
            self.server = server
            self.origin = origin
            self.acceptsTLS = acceptsTLS
        }
    }

    /// The first byte of a TLS record carrying a handshake message (RFC 8446 §5.1).
    static let tlsHandshakeRecord: UInt8 = 0x16

    /// Answers the CONNECT and arranges for TLS to start once the answer is with the kernel.
    func startInterception(_ head: RequestHead, _ authority: Authority, _ interception: Interception) {
        let origin = InterceptedOrigin(authority)
        let server: TLSServerContext
        do {
            server = try interception.serverContext(for: origin.host, logger: context.logger)
        } catch {
            context.logger.error("cannot mint a certificate for an intercepted host",
                                 metadata: ["host": .string(origin.host), "error": "\(error)"])
            respondBeforeExchange(ProxyError(status: 502, type: "proxy_internal_error",
                                             message: "no certificate could be made for \(origin.description)"),
                                  head: head, close: true)
            return
        }
        guard client.input.isEmpty else {
            // TLS bytes sent before the tunnel was established: nothing safe to do with them.
            respondBeforeExchange(.badRequest("bytes arrived after the CONNECT head before the tunnel was established"),
                                  head: head, close: true)
            return
        }
        exchange.close()
        headTimer.cancel()
        // A client that does not take the answer does not hold the connection.
        client.setTimeouts(read: nil, write: context.timeouts.clientHeader)
        pendingInterception = PendingInterception(server: server, origin: origin,
                                                  acceptsTLS: context.router.interceptsOverTLS(authority))
        client.write(Self.established)
    }

    /// The `200` is with the kernel: the app's first byte (left unread) says what the tunnel
    /// carries. It must come within `clientHeader`, like a request head.
    func completeInterception(_ pending: PendingInterception) {
        guard !pending.answered else { return }
        pending.answered = true
        client.setTimeouts(read: context.timeouts.clientHeader, write: context.timeouts.clientHeader)
        let waiting = Connection.peekFirstByte(of: client) { [self] byte in
            guard pendingInterception === pending else { return }
            pendingInterception = nil
            classify(byte, pending)
        }
        if !waiting { abort() }
    }

    /// Continues the tunnel as TLS or as plaintext HTTP, in a new session.
    private func classify(_ first: UInt8?, _ pending: PendingInterception) {
        guard let first else {
            noteInterceptEnd(.endOfStream, origin: pending.origin)  // the app left without a byte
            abort()
            return
        }
        let next: any ByteStream
        if first == Self.tlsHandshakeRecord {
            guard pending.acceptsTLS, let tls = Connection.startTLSServer(on: client, context: pending.server) else {
                if !pending.acceptsTLS {
                    context.logger.warning("an app spoke TLS in a tunnel whose route sends plaintext (http:// upstream); closed",
                                           metadata: ["host": .string(pending.origin.host)])
                }
                abort()
                return
            }
            next = tls
        } else {
            next = client
            client.setTimeouts(read: nil, write: nil)
        }
        // Adopt first: a drain must never see a moment with neither session. (The new session
        // takes the stream's delegate.)
        context.adopt(next, intercepted: pending.origin)
        context.remove(self)
    }

    /// The TLS handshake with the app completed.
    func connectionDidConnect(_ connection: any ByteStream) {
        handshakeDone = true
        awaitNextRequest()  // from now on the idle timeout, as on any connection
    }

    /// An intercepted session that ends before its handshake completed: the app refused the
    /// certificate (or is not speaking TLS); counted and logged once per host.
    /// `origin`: the tunnel's, for a session still waiting for the app's first byte in it.
    func noteInterceptEnd(_ reason: ConnectionEnd, origin tunnel: InterceptedOrigin? = nil) {
        let origin: InterceptedOrigin
        if let tunnel {
            origin = tunnel
        } else {
            guard let intercepted, !handshakeDone else { return }
            origin = intercepted
        }
        guard let interception = context.interception else { return }
        handshakeDone = true
        interception.handshakeFailed(host: origin.host, end: reason, logger: context.logger)
    }
}
