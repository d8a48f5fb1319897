import EventLoop
import XCTest

/// A loop task runs once per scheduling, in the iteration it was scheduled in, before a
/// zero-delay timer scheduled at the same moment.
final class LoopTaskTests: XCTestCase {
    func testATaskRunsOnceLaterInTheSameIterationBeforeAZeroTimer() throws {
        let loop = try EventLoop()
        var order: [String] = []
        let task = LoopTask(on: loop) { order.append("task") }
        let timer = Timer(on: loop) { order.append("timer"); loop.stop() }
        let start = Timer(on: loop) {
            timer.schedule(after: .zero)
            task.schedule()
            task.schedule()
            XCTAssertTrue(task.isScheduled)
            order.append("scheduled")
        }
        start.schedule(after: .zero)
        let guardTimer = Timer(on: loop, after: .seconds(5)) { loop.stop() }
        loop.run()
        XCTAssertEqual(order, ["scheduled", "task", "timer"], "once, after its scheduler, before the next iteration's timer")
        XCTAssertFalse(task.isScheduled)
        withExtendedLifetime((task, timer, start, guardTimer)) {}
    }

    func testACancelledTaskNeverRunsAndCanNotBeScheduledAgain() throws {
        let loop = try EventLoop()
        var runs = 0
        let task = LoopTask(on: loop) { runs += 1 }
        let start = Timer(on: loop) {
            task.schedule()
            task.cancel()
            task.schedule()
        }
        start.schedule(after: .zero)
        let stop = Timer(on: loop, after: .milliseconds(50)) { loop.stop() }
        loop.run()
        XCTAssertEqual(runs, 0)
        withExtendedLifetime((task, start, stop)) {}
    }

    /// A task keeps its loop (its libevent event is on the loop's base), so one released after
    /// every other reference to the loop frees its event before the base.
    func testATaskKeepsItsLoopUntilItIsReleased() throws {
        weak var weakLoop: EventLoop?
        var task: LoopTask?
        do {
            let loop = try EventLoop()
            weakLoop = loop
            task = LoopTask(on: loop) {}
        }
        XCTAssertNotNil(weakLoop, "the task holds its loop")
        XCTAssertFalse(task?.isScheduled ?? true)
        task = nil
        XCTAssertNil(weakLoop, "released with its task")
    }
}
