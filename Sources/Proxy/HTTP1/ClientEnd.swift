import EventLoop

/// The app's end of an ``ExchangeSession``: a connection it reads HTTP/1.1 requests from (a socket,
/// TLS over one, a test's in-memory stream), or one stream of an app's HTTP/2 connection, whose
/// request head the connection gives the session typed and whose body and response go through
/// the stream's ``HTTP2StreamPipe``.
///
/// A closed enum, not a protocol: the session's calls on a stream, a dozen per request, go to
/// the pipe directly; only a connection is called through ``ByteStream``.
enum ClientEnd {
    /// An app's connection.
    case connection(any ByteStream)
    /// One stream of an app's HTTP/2 connection.
    case http2(HTTP2StreamPipe)

    /// The connection, for what only a connection does (a tunnel, interception, a switch to
    /// HTTP/2); nil for a stream.
    var byteStream: (any ByteStream)? {
        if case .connection(let stream) = self { return stream }
        return nil
    }

    /// What the app sent and the session has not read: request heads and bodies (a stream's
    /// body only, unframed or with the framing its pipe gives it).
    @inline(__always)
    var input: EventBuffer {
        switch self {
        case .connection(let stream): stream.input
        case .http2(let pipe): pipe.input
        }
    }

    /// Where the response goes (asking for a stream's tells its connection to look at it).
    @inline(__always)
    var output: EventBuffer {
        switch self {
        case .connection(let stream): stream.output
        case .http2(let pipe): pipe.output
        }
    }

    /// Appends `bytes` to ``output``.
    func write(_ bytes: [UInt8]) { output.append(bytes) }

    /// Delivers what the app sends (a stream's: as its connection receives it).
    func startReading() {
        switch self {
        case .connection(let stream): stream.startReading()
        case .http2(let pipe): pipe.startReading()
        }
    }

    /// Stops delivering what the app sends (it waits in the kernel, or in the stream's window).
    func stopReading() {
        switch self {
        case .connection(let stream): stream.stopReading()
        case .http2(let pipe): pipe.stopReading()
        }
    }

    /// The inactivity timeouts: reading the request (`read`), writing the response (`write`).
    func setTimeouts(read: Duration?, write: Duration?) {
        switch self {
        case .connection(let stream): stream.setTimeouts(read: read, write: write)
        case .http2(let pipe): pipe.setTimeouts(read: read, write: write)
        }
    }

    /// Closes at once (a stream: reset).
    func close() {
        switch self {
        case .connection(let stream): stream.close()
        case .http2(let pipe): pipe.close()
        }
    }

    /// Closes once the response is out (a connection lingers up to 2 s for it; a stream ends
    /// with it), then runs `flushed`.
    func closeAfterFlush(flushed: (() -> Void)?) {
        switch self {
        case .connection(let stream): stream.closeAfterFlush(flushed: flushed)
        case .http2(let pipe): pipe.closeAfterFlush(flushed: flushed)
        }
    }

    /// Whether requests come over TLS (an intercepted tunnel's): never for a stream, whose
    /// connection is what ran TLS.
    var isTLS: Bool { byteStream?.isTLS ?? false }

    /// The server name the app's TLS handshake asked for (an intercepted tunnel's).
    var tlsServerName: String? { byteStream?.tlsServerName }
}
