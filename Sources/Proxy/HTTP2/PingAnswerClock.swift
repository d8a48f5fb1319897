import EventLoop
import HTTP2

/// When an HTTP/2 connection's held PING answers (``HTTP2/HTTP2Codec/holdsPingAnswers``) go out
/// alone: ``HTTP2/HTTP2Codec/pingAnswerDelay`` after they were first held, unless frames took
/// them first. The app side's ``HTTP2ServerSession`` and the upstream side's
/// ``HTTP2UpstreamConnection`` each have one. On its connection's loop.
final class PingAnswerClock {
    private let loop: EventLoop
    /// Sends the held answers (the codec releases them, the connection flushes it).
    private let release: () -> Void
    /// Made on first use: most connections of plain HTTP/2 clients never get a PING.
    private var timer: Timer?

    init(loop: EventLoop, release: @escaping () -> Void) {
        self.loop = loop
        self.release = release
    }

    /// After each send: runs while answers are held, stops once they went with other frames.
    func follow(holding: Bool) {
        if holding {
            let timer = self.timer ?? makeTimer()
            // (Armed when the first of them was held: later answers do not push it back.)
            if !timer.isScheduled { timer.schedule(after: HTTP2Codec.pingAnswerDelay) }
        } else {
            timer?.suspend()
        }
    }

    /// The connection ended.
    func cancel() {
        timer?.cancel()
    }

    private func makeTimer() -> Timer {
        let timer = Timer(on: loop) {}
        timer.action = { [unowned self] in release() }
        self.timer = timer
        return timer
    }
}
