/// A server confined to one ``EventLoop`` that can be closed (``LocalServer`` and the
/// servers built on it), so ``ServerThread`` can run any of them.
public protocol LoopServer: AnyObject {
    /// The address actually bound (the real port when 0 was asked for).
    var address: SocketAddress { get }
    /// Stops listening and closes every connection. Call on the server's loop thread.
    func close()
}
