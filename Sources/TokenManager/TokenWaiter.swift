import EventLoop

/// One request waiting for a token, living on the request's loop.
///
/// Completes exactly once: the `done` flag is read and written only on ``loop``'s thread (the
/// token loop reaches it through a ``LoopBound``), so whichever of "token arrived", "timed out"
/// and "credential stopped" comes first wins.
final class TokenWaiter {
    /// Identifies the waiter in the credential's table on the token loop.
    let id: UInt64
    /// The loop the request lives on.
    let loop: EventLoop
    private var completion: ((AccessToken?) -> Void)?
    private var timer: Timer?

    /// Creates the waiter on `loop`'s thread and arms its timeout, after which it completes
    /// with nil and calls `onTimeout`.
    init(id: UInt64, loop: EventLoop, timeout: Duration, completion: @escaping (AccessToken?) -> Void,
         onTimeout: @escaping () -> Void) {
        self.id = id
        self.loop = loop
        self.completion = completion
        timer = Timer(on: loop, after: timeout) { [self] in
            if finish(nil) { onTimeout() }
        }
    }

    /// Completes with `token` unless already completed; returns whether this call completed it.
    @discardableResult
    func finish(_ token: AccessToken?) -> Bool {
        guard let completion else { return false }
        self.completion = nil
        timer?.cancel()
        timer = nil
        completion(token)
        return true
    }
}
