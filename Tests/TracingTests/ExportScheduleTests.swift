import XCTest
@testable import TraceExport

final class ExportScheduleTests: XCTestCase {
    func testNothingQueuedWaitsTheDelay() {
        var schedule = ExportSchedule(scheduleDelay: .seconds(5))
        XCTAssertEqual(schedule.timerFired(queued: 0), .wait(.seconds(5)))
        XCTAssertFalse(schedule.exporting)
    }

    func testQueuedSpansAreSentWhenTheTimerFiresAndAFullBatchAtOnce() {
        var schedule = ExportSchedule(scheduleDelay: .seconds(5))
        XCTAssertEqual(schedule.timerFired(queued: 3), .exportNew)
        XCTAssertNil(schedule.batchReady(), "one export at a time")
        XCTAssertEqual(schedule.exportFinished(.accepted, queued: 600, batchSize: 512), [.releaseHeld, .exportNew])
        XCTAssertEqual(schedule.exportFinished(.accepted, queued: 88, batchSize: 512), [.releaseHeld, .wait(.seconds(5))])
        XCTAssertEqual(schedule.batchReady(), .exportNew)
    }

    func testRetryableFailuresBackOffThenTheBatchIsDropped() {
        var schedule = ExportSchedule(scheduleDelay: .seconds(5), maxAttempts: 4)
        XCTAssertEqual(schedule.timerFired(queued: 1), .exportNew)
        XCTAssertEqual(schedule.exportFinished(.retryable(retryAfter: nil), queued: 0, batchSize: 512), [.wait(.seconds(1))])
        XCTAssertNil(schedule.batchReady(), "a full queue does not cut a backoff short")
        XCTAssertEqual(schedule.timerFired(queued: 600), .exportHeld)
        XCTAssertEqual(schedule.exportFinished(.retryable(retryAfter: nil), queued: 0, batchSize: 512), [.wait(.seconds(2))])
        XCTAssertEqual(schedule.timerFired(queued: 0), .exportHeld)
        XCTAssertEqual(schedule.exportFinished(.retryable(retryAfter: nil), queued: 0, batchSize: 512), [.wait(.seconds(4))])
        XCTAssertEqual(schedule.timerFired(queued: 0), .exportHeld)
        XCTAssertEqual(schedule.exportFinished(.retryable(retryAfter: nil), queued: 0, batchSize: 512), [.dropHeld, .wait(.seconds(5))])
        XCTAssertFalse(schedule.holding)
    }

    func testBackoffIsCappedSoAReceiverThatComesBackIsUsedSoon() {
        var schedule = ExportSchedule(scheduleDelay: .seconds(5), maxAttempts: 10, maxBackoff: .seconds(5))
        _ = schedule.timerFired(queued: 1)
        var delays: [ExportSchedule.Action] = []
        for _ in 0..<6 {
            delays += schedule.exportFinished(.retryable(retryAfter: nil), queued: 0, batchSize: 512)
            _ = schedule.timerFired(queued: 0)
        }
        XCTAssertEqual(delays, [.wait(.seconds(1)), .wait(.seconds(2)), .wait(.seconds(4)), .wait(.seconds(5)), .wait(.seconds(5)), .wait(.seconds(5))])
        XCTAssertEqual(schedule.exportFinished(.accepted, queued: 0, batchSize: 512), [.releaseHeld, .wait(.seconds(5))])
    }

    func testRetryAfterIsHonouredUpToItsCap() {
        var schedule = ExportSchedule(scheduleDelay: .seconds(5), maxRetryAfter: .seconds(60))
        _ = schedule.timerFired(queued: 1)
        XCTAssertEqual(schedule.exportFinished(.retryable(retryAfter: .seconds(7)), queued: 0, batchSize: 512), [.wait(.seconds(7))])
        _ = schedule.timerFired(queued: 0)
        XCTAssertEqual(schedule.exportFinished(.retryable(retryAfter: .seconds(3600)), queued: 0, batchSize: 512), [.wait(.seconds(60))])
    }

    func testARejectedBatchIsDroppedAtOnce() {
        var schedule = ExportSchedule(scheduleDelay: .seconds(5))
        _ = schedule.timerFired(queued: 1)
        XCTAssertEqual(schedule.exportFinished(.rejected, queued: 0, batchSize: 512), [.dropHeld, .wait(.seconds(5))])
        XCTAssertEqual(schedule.attempts, 0)
    }
}
