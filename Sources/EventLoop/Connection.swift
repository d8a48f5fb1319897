import CLibevent
import Glibc

/// Where ``ByteStream``s over sockets come from: accepted or connected, plain or TLS. Each
/// factory returns the one stream type that carries that kind of socket:
///
/// - ``SocketConnection`` for accepted connections and connects to a resolved address — the
///   whole proxy data path — plain or TLS (OpenSSL driven directly by its ``TLSLayer``);
/// - ``BufferEventConnection`` for connects by host name (libevent's resolver), plain or TLS
///   (OpenSSL behind `bufferevent_openssl`): token endpoints, Redis, probes.
///
/// Each stream owns its C handles, keeps itself alive while its socket is open, and is
/// confined to its loop's thread. The delegate hears connects from the loop, never from inside
/// the call that started them.
public enum Connection {
    /// Most not-yet-sent bytes the kernel queues on a client socket (`TCP_NOTSENT_LOWAT`): 16 KiB,
    /// as Cloudflare runs its edge with. What is not yet sent waits in the proxy's own buffers
    /// instead, where the buffer budget counts it; every byte the kernel holds for a client
    /// that has stopped reading is a byte its backend had to send for nothing (256 KiB here
    /// made the slow-read burst cost the backend ~0.3 GiB more per 1000 readers).
    static let notSentLowWatermark = 16 * 1024

    /// Wraps an accepted socket. Reading starts when ``ByteStream/startReading()`` is called.
    public static func accepted(socket fd: Int32, on loop: EventLoop) -> (any ByteStream)? {
        prepareAccepted(fd)
        guard let connection = SocketConnection(loop: loop, socket: fd, connected: true) else {
            CLibevent.close(fd)
            return nil
        }
        return connection
    }

    /// Wraps an accepted socket as the server side of TLS: the handshake runs as soon as the
    /// loop does, presenting `context`'s certificate; the delegate hears
    /// ``ConnectionDelegate/connectionDidConnect(_:)`` once it completed (bytes read before are
    /// none: the peer's first bytes are the handshake), or ``ConnectionDelegate/connection(_:didEnd:)``.
    public static func acceptTLS(socket fd: Int32, context: TLSServerContext, on loop: EventLoop) -> (any ByteStream)? {
        prepareAccepted(fd)
        guard let ssl = context.makeSSL(), let layer = TLSLayer(ssl: ssl, fd: fd, role: .server(context)),
              let connection = SocketConnection(loop: loop, socket: fd, connected: true, tls: layer) else {
            CLibevent.close(fd)
            return nil
        }
        return connection
    }

    /// Starts connecting to `host:port` (a name is resolved asynchronously, A and AAAA).
    /// The delegate hears ``ConnectionDelegate/connectionDidConnect(_:)`` or
    /// ``ConnectionDelegate/connection(_:didEnd:)``. Bytes written before the connect completes are
    /// sent once it does.
    public static func connect(host: String, port: Int, on loop: EventLoop, delegate: any ConnectionDelegate) -> (any ByteStream)? {
        guard let bev = bufferevent_socket_new(loop.base, -1, BufferEventConnection.options) else { return nil }
        let connection = BufferEventConnection(loop: loop, bev: bev, role: .plain, connected: false)
        connection.delegate = delegate
        connection.connect(host: host, port: port)
        return connection
    }

    /// Starts a TLS connection to `host:port`: resolves, connects, handshakes and verifies the
    /// peer per `context` before ``ConnectionDelegate/connectionDidConnect(_:)``. Nothing written
    /// before that is sent unless the handshake and verification succeed.
    public static func connectTLS(host: String, port: Int, context: TLSClientContext, on loop: EventLoop,
                                  delegate: any ConnectionDelegate) -> (any ByteStream)? {
        guard let connection = unconnectedTLS(context: context, serverName: host, port: port, on: loop,
                                              delegate: delegate) else { return nil }
        connection.connect(host: host, port: port)
        return connection
    }

    /// Starts connecting to an already-resolved address, with TLS when `tls` is given (the
    /// name is what the certificate must match and what SNI carries). The delegate hears the
    /// outcome from the loop, never from inside this call. A plain connection to a loopback
    /// address gets a receive window that follows its consumer (``ReceiveWindow``): its user
    /// reports what the consumer took (``ByteStream/widenReceiveWindow(taken:)``).
    public static func connect(to address: SocketAddress, tls: (context: TLSClientContext, serverName: String)?,
                               on loop: EventLoop, delegate: any ConnectionDelegate) -> (any ByteStream)? {
        let fd = CLibevent.socket(address.isIPv6 ? AF_INET6 : AF_INET, Int32(SOCK_STREAM.rawValue | SOCK_NONBLOCK.rawValue | SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return nil }
        var layer: TLSLayer?
        if let tls {
            guard let ssl = tls.context.makeSSL(host: tls.serverName, port: address.port),
                  let made = TLSLayer(ssl: ssl, fd: fd, role: .client(tls.context)) else {
                CLibevent.close(fd)
                return nil
            }
            layer = made
        }
        guard let connection = SocketConnection(loop: loop, socket: fd, connected: false, tls: layer) else {
            CLibevent.close(fd)
            return nil
        }
        if address.isLoopback && tls == nil {
            // A backend on this host: offer it network-sized segments and a window that
            // follows the client (ReceiveWindow says why).
            _ = shim_set_max_segment(fd, Int32(ReceiveWindow.loopbackSegmentSize))
            connection.receiveWindow = ReceiveWindow()
        }
        connection.delegate = delegate
        connection.startConnect(to: address)
        return connection
    }

    /// A TLS client stream that has not started connecting: an `SSL` for `serverName` (SNI,
    /// verification, session resumption) inside a new bufferevent on `loop`.
    private static func unconnectedTLS(context: TLSClientContext, serverName: String, port: Int, on loop: EventLoop,
                                       delegate: any ConnectionDelegate) -> BufferEventConnection? {
        guard let ssl = context.makeSSL(host: serverName, port: port),
              let connection = BufferEventConnection.tlsClient(loop: loop, ssl: ssl, context: context) else { return nil }
        connection.delegate = delegate
        return connection
    }

    /// Socket options of every accepted connection.
    private static func prepareAccepted(_ fd: Int32) {
        _ = shim_set_nodelay(fd)
        // A client that reads slowly would otherwise have up to 4 MiB (tcp_wmem's maximum)
        // queued in the kernel per connection, beyond every limit of the proxy: the response
        // waits in the proxy's own buffers (and spool) instead, where it is counted.
        _ = shim_set_notsent_lowat(fd, Int32(notSentLowWatermark))
    }
}
