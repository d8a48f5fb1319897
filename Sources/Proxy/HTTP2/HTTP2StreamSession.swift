import HTTP1

/// Serves one stream of an app's HTTP/2 connection: one request, its head checked and built by
/// the connection (``HTTP2RequestHeadValidator``) and given here typed (``start(streamHead:)``),
/// its body read from the stream's ``HTTP2StreamPipe``, its response given to it typed. The
/// exchange runs as any other (``ExchangeSession``); nothing of an HTTP/1.1 connection's —
/// head reading, keep-alive, tunnels, interception, local answers — is made for a stream.
///
/// Owned by its ``HTTP2ServerSession`` while the stream is open, and by the pipe's events.
final class HTTP2StreamSession: ExchangeSession {
    /// A session for the stream of `pipe`; `load` is its connection's, `grpc` says it carries a
    /// gRPC call (its proxy-generated errors are gRPC-shaped).
    init(pipe: HTTP2StreamPipe, context: WorkerContext, intercepted: InterceptedOrigin?, load: HTTP2ConnectionLoad, grpc: Bool) {
        super.init(client: .http2(pipe), context: context, intercepted: intercepted, load: load, grpc: grpc)
    }

    /// Serves the stream's request: its head, checked and built by the stream's connection, or
    /// what those checks refused (answered as a malformed HTTP/1.1 head is). Nothing is read
    /// from the stream but the body.
    func start(streamHead: Result<RequestHead, HTTPParseError>) {
        http2Pipe?.session = self
        client.startReading()
        switch streamHead {
        case .success(let head):
            guard connection.headGiven() else {
                // (A new session always waits for its first request.)
                assertionFailure("an HTTP/2 stream's session was not waiting for its request")
                abort()
                return
            }
            begin(head)
        case .failure(let error):
            reject(error)
        }
    }
}
