import EventLoop
import HTTP1

/// HTTPS interception: a CONNECT to an intercepting route's host is answered `200`, then the
/// same socket continues as the TLS server for that name (a leaf minted by the sidecar's CA) in
/// a new session whose requests must all be for that origin.
extension ClientSession {
    /// Sent before the TLS handshake (RFC 9110 §9.3.6: any 2xx; the reason phrase is customary).
    private static let established = Array("HTTP/1.1 200 Connection established\r\n\r\n".utf8)

    /// What waits for the `200` to leave before the socket turns into TLS (a class: the session
    /// checks for one on every drain, and a nil check of a reference costs nothing).
    final class PendingInterception {
        let server: TLSServerContext
        let origin: InterceptedOrigin

        init(server: TLSServerContext, origin: InterceptedOrigin) {
            self.server = server
            self.origin = origin
        }
    }

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
        pendingInterception = PendingInterception(server: server, origin: origin)
        client.write(Self.established)
    }

    /// The `200` is with the kernel: the socket continues as TLS in a new session.
    func completeInterception(_ pending: PendingInterception) {
        pendingInterception = nil
        guard let tls = Connection.startTLSServer(on: client, context: pending.server) else {
            abort()
            return
        }
        // Adopt first: a drain must never see a moment with neither session.
        context.adopt(tls, intercepted: pending.origin)
        context.remove(self)
    }

    /// The TLS handshake with the app completed.
    func connectionDidConnect(_ connection: any ByteStream) {
        handshakeDone = true
        awaitNextRequest()  // from now on the idle timeout, as on any connection
    }

    /// An intercepted session that ends before its handshake completed: the app refused the
    /// certificate (or is not speaking TLS); counted and logged once per host.
    func noteInterceptEnd(_ reason: ConnectionEnd) {
        guard let origin = intercepted, !handshakeDone, let interception = context.interception else { return }
        handshakeDone = true
        interception.handshakeFailed(host: origin.host, end: reason, logger: context.logger)
    }
}
