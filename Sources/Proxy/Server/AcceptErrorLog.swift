import EventLoop
import Logging

/// Logs failed accepts at most once per ``interval`` per worker, counting the repeats it held
/// back: under descriptor exhaustion accept can fail many times a second, and one line per
/// failure would flood the log (and the disk) exactly when the process is short of resources.
struct AcceptErrorLog {
    /// The shortest time between two lines.
    static let interval: Duration = .seconds(1)

    private var lastLogged: ContinuousClock.Instant?
    private var suppressed = 0

    /// Records one failure and, if a line is due, returns how many were held back since the last
    /// line (the caller then logs); nil when this one is suppressed.
    mutating func record(at now: ContinuousClock.Instant) -> Int? {
        if let lastLogged, now - lastLogged < AcceptErrorLog.interval {
            suppressed += 1
            return nil
        }
        lastLogged = now
        let held = suppressed
        suppressed = 0
        return held
    }

    /// Records `failure` and logs it through `logger` when due.
    mutating func report(_ failure: AcceptFailure, to logger: Logger) {
        guard let suppressed = record(at: .now) else { return }
        logger.error("accept failed; pausing new connections", metadata: [
            "error": .string(failure.message),
            "errno": "\(failure.code)",
            "pause": "\(failure.pause)",
            "suppressed": "\(suppressed)",
        ])
    }
}
