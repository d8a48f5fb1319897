@_spi(Testing) import EventLoop
import XCTest

/// A timer with an owner tells the owner which of its timers expired, instead of running its
/// action (``Timer/owner``).
final class TimerTests: XCTestCase {
    /// Keeps two timers and records which fired, in order.
    private final class Owner: TimerOwner {
        let first: LoopTimer
        let second: LoopTimer
        var fired: [String] = []
        var onFire: (() -> Void)?

        init(loop: EventLoop) {
            first = LoopTimer(on: loop) { XCTFail("the action of a timer with an owner never runs") }
            second = LoopTimer(on: loop) { XCTFail("the action of a timer with an owner never runs") }
            first.owner = self
            second.owner = self
        }

        func timerFired(_ timer: LoopTimer) {
            fired.append(timer === first ? "first" : timer === second ? "second" : "other")
            onFire?()
        }
    }

    func testTheOwnerIsToldWhichTimerExpiredInDeadlineOrder() throws {
        let loop = try EventLoop()
        let owner = Owner(loop: loop)
        owner.second.schedule(after: .milliseconds(40))
        owner.first.schedule(after: .milliseconds(5))
        owner.onFire = { if owner.fired.count == 2 { loop.stop() } }
        let guardTimer = LoopTimer(on: loop, after: .seconds(5)) { loop.stop() }
        loop.run()
        XCTAssertEqual(owner.fired, ["first", "second"])
        withExtendedLifetime(guardTimer) {}
    }

    func testASuspendedTimerDoesNotTellItsOwnerAndAnExpiryTellsItOnce() throws {
        let loop = try EventLoop()
        let owner = Owner(loop: loop)
        owner.first.schedule(after: .milliseconds(5))
        owner.first.suspend()
        let stop = LoopTimer(on: loop, after: .milliseconds(50)) { loop.stop() }
        loop.run()
        XCTAssertEqual(owner.fired, [], "suspended before its deadline")
        owner.second.schedule(after: .seconds(60))
        owner.second.expire()
        owner.second.expire()
        XCTAssertEqual(owner.fired, ["second"], "an expiry as if the deadline had passed, once")
        withExtendedLifetime(stop) {}
    }

    func testAStoppedTimerNeverFiresUntilRenewedAndThenServesItsNewOwner() throws {
        let loop = try EventLoop()
        let owner = Owner(loop: loop)
        owner.first.schedule(after: .milliseconds(5))
        owner.first.stop()
        owner.first.schedule(after: .milliseconds(5))  // (not armed again: it stays stopped)
        let stop = LoopTimer(on: loop, after: .milliseconds(50)) { loop.stop() }
        loop.run()
        XCTAssertEqual(owner.fired, [], "stopped while its expiry was pending, and scheduled again while stopped")

        // Renewed: no owner and no action any more; a next owner arms it and is told.
        let timer = owner.first
        timer.renew()
        let next = Owner(loop: loop)
        timer.owner = next
        timer.schedule(after: .milliseconds(5))
        next.onFire = { loop.stop() }
        let guardTimer = LoopTimer(on: loop, after: .seconds(5)) { loop.stop() }
        loop.run()
        XCTAssertEqual(next.fired, ["other"], "the renewed timer told its new owner")
        XCTAssertEqual(owner.fired, [], "and not its old one")
        withExtendedLifetime((stop, guardTimer)) {}
    }

    /// A stopped timer keeps its pending expiry for its next owner: that owner's deadline is
    /// still met exactly, later than the old expiry (which then finds nothing due and waits for
    /// the rest) or earlier (armed for it), and the old owner's deadline never fires.
    func testARenewedTimerFiresAtItsNewOwnersDeadlineWhetherBeforeOrAfterTheOldExpiry() throws {
        let loop = try EventLoop()
        for (old, new) in [(20, 120), (300, 30)] {
            let owner = Owner(loop: loop)
            owner.first.schedule(after: .milliseconds(old))
            owner.first.stop()
            let timer = owner.first
            timer.renew()
            let next = Owner(loop: loop)
            timer.owner = next
            let start = Timer.monotonicNow()
            timer.schedule(after: .milliseconds(new))
            var firedAfter: UInt64 = 0
            next.onFire = {
                firedAfter = Timer.monotonicNow() - start
                loop.stop()
            }
            let guardTimer = LoopTimer(on: loop, after: .seconds(5)) { loop.stop() }
            loop.run()
            XCTAssertEqual(next.fired, ["other"], "old \(old) ms, new \(new) ms")
            XCTAssertEqual(owner.fired, [], "the old owner is not told")
            XCTAssertGreaterThanOrEqual(firedAfter, UInt64(new) * 1_000_000, "never before the new deadline")
            XCTAssertLessThan(firedAfter, UInt64(new + 250) * 1_000_000, "not left for a later expiry")
            // The old expiry, if still to come, finds nothing due.
            next.onFire = nil
            let settle = LoopTimer(on: loop, after: .milliseconds(max(old - new, 0) + 50)) { loop.stop() }
            loop.run()
            XCTAssertEqual(next.fired, ["other"], "told once")
            withExtendedLifetime((guardTimer, settle)) {}
        }
    }

    /// A kept timer (a worker's spare, or one in an object whose other properties outlive its
    /// loop reference) keeps its loop: its libevent event is on the loop's base, and freeing
    /// it after the base would be a use after free no sanitizer sees.
    func testATimerKeepsItsLoopUntilItIsReleased() throws {
        weak var weakLoop: EventLoop?
        var timer: LoopTimer?
        do {
            let loop = try EventLoop()
            weakLoop = loop
            timer = LoopTimer(on: loop) {}
            timer?.schedule(after: .seconds(60))  // (its event made, on the loop's base)
            timer?.stop()
        }
        XCTAssertNotNil(weakLoop, "the timer holds its loop")
        timer = nil
        XCTAssertNil(weakLoop, "released with its last timer")
    }
}
