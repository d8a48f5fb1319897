import EventLoop
import Foundation
import Glibc
import XCTest

/// A loop running on its own thread for one test; remembers the thread so tests can check
/// where callbacks ran.
final class LoopHarness: Sendable {
    let thread: LoopThread
    private let threadID = Locked<pthread_t?>(nil)

    init() throws {
        let threadID = self.threadID
        thread = try LoopThread { _ in threadID.update { $0 = pthread_self() } }
        try thread.start()
    }

    var loop: EventLoop { thread.loop }

    /// Whether the caller runs on this loop's thread.
    var isCurrent: Bool {
        guard let id = threadID.value else { return false }
        return pthread_equal(id, pthread_self()) != 0
    }

    func stop() { thread.stopAndJoin() }
}
