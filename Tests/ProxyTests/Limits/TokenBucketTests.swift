import XCTest
@testable import Proxy

/// The rate of `limits.rate`: a burst at once, then the rate, and how long to wait.
final class TokenBucketTests: XCTestCase {
    private let second: UInt64 = 1_000_000_000

    func testABurstThenTheRate() {
        var bucket = TokenBucket(perSecond: 10, burst: 3, now: 0)
        XCTAssertEqual((0..<3).map { _ in bucket.take(at: 0) }, [nil, nil, nil], "the burst at once")
        XCTAssertEqual(bucket.take(at: 0), 1, "empty: retry in a second (whole seconds, at least 1)")
        XCTAssertNil(bucket.take(at: second / 10), "one token per 100 ms")
        XCTAssertNotNil(bucket.take(at: second / 10))
        // A long pause refills to the burst, never beyond.
        XCTAssertEqual(bucket.available(at: 100 * second), 3)
        var admitted = 0
        for tick in 0..<1000 where bucket.take(at: 100 * second + UInt64(tick) * second / 100) == nil { admitted += 1 }
        XCTAssertEqual(admitted, 3 + 99, "10 s at 100 requests a second: the burst and 10 per second")
    }

    func testASlowRateWaitsWholeSeconds() {
        var bucket = TokenBucket(perSecond: 0.2, burst: 1, now: 0)
        XCTAssertNil(bucket.take(at: 0))
        XCTAssertEqual(bucket.take(at: 0), 5, "one token per 5 s")
        XCTAssertEqual(bucket.take(at: 4 * second), 1)
        XCTAssertNil(bucket.take(at: 5 * second))
    }

    func testAClockThatGoesBackTakesNothing() {
        var bucket = TokenBucket(perSecond: 1, burst: 1, now: 10 * second)
        XCTAssertNil(bucket.take(at: 10 * second))
        XCTAssertNotNil(bucket.take(at: 5 * second), "no tokens made from an earlier instant")
        bucket.refund()
        XCTAssertNil(bucket.take(at: 10 * second), "a refund gives the token back")
    }

    /// The fleet's bucket as the store's script keeps it (refill, take, debt floor).
    private struct FleetStore {
        var tokens: Double
        var at: UInt64
        let perSecond: Double, burst: Double

        mutating func take(_ count: Int, at now: UInt64) -> Double {
            if now > at { tokens = min(burst, tokens + Double(now - at) / 1e9 * perSecond) }
            at = max(at, now)
            tokens = max(-16 * (perSecond + burst), tokens - Double(count))
            return tokens
        }
    }

    /// `replicas` buckets of 100/s with a burst of 20 sharing one store for `seconds`, each
    /// offered 500/s / replicas from `from` seconds on, sending what it took every 10 ms and hearing
    /// back 2 ms later (requests go on meanwhile): what the fleet admitted, and what was offered.
    private func simulateFleet(replicas count: Int, seconds: Int, from start: Int = 0) -> (admitted: Int, offered: Int) {
        let perSecond = 100.0, burst = 20
        var store = FleetStore(tokens: Double(burst), at: 0, perSecond: perSecond, burst: Double(burst))
        var replicas = (0..<count).map { _ in TokenBucket(perSecond: perSecond, burst: burst, now: 0) }
        var pending: [(replica: Int, due: UInt64, fleet: Double)] = []
        let millisecond = second / 1000
        let every = UInt64(2 * count)  // 500/s in all
        var admitted = 0, offered = 0
        for ms in 0..<UInt64(seconds * 1000) {
            let now = ms * millisecond
            for answer in pending where answer.due == now { replicas[answer.replica].answered(fleet: answer.fleet, at: now) }
            pending.removeAll { $0.due == now }
            for replica in 0..<count {
                if ms >= UInt64(start * 1000) && (ms + UInt64(replica) * 2) % every == 0 {
                    offered += 1
                    if replicas[replica].take(at: now) == nil { admitted += 1 }
                }
                if ms % 10 == UInt64(replica) {
                    let taken = replicas[replica].send()
                    pending.append((replica, now + 2 * millisecond, store.take(taken, at: now)))
                }
            }
        }
        return (admitted, offered)
    }

    func testThreeReplicasSharingTheStoreAdmitTheFleetRate() {
        let (admitted, offered) = simulateFleet(replicas: 3, seconds: 20)
        let expected = 20.0 + 100 * 20
        XCTAssertGreaterThanOrEqual(Double(offered), 4.9 * 100 * 20)
        XCTAssertEqual(Double(admitted), expected, accuracy: expected * 0.05, "the fleet admits its rate, not three times it")
    }

    func testFiveReplicasBurstingAfterAQuietSpellPayTheirBurstsBack() {
        // Each replica's bucket is full after 2 quiet seconds: together they take 5 bursts at
        // once; the fleet's debt makes them wait it out.
        let (admitted, _) = simulateFleet(replicas: 5, seconds: 10, from: 2)
        let expected = 20.0 + 100 * 8
        XCTAssertEqual(Double(admitted), expected, accuracy: expected * 0.05)
    }

    func testAnAnswerSetsTheFleetLevelLessWhatWasTakenSinceTheSend() {
        var bucket = TokenBucket(perSecond: 10, burst: 10, now: 0)
        XCTAssertNil(bucket.take(at: 0))
        XCTAssertEqual(bucket.send(), 1)
        XCTAssertNil(bucket.take(at: 0), "taken while the send was in flight")
        XCTAssertEqual(bucket.unsynced, 1)
        bucket.answered(fleet: -2, at: 0)
        XCTAssertEqual(bucket.available(at: 0), -3, "others took more: a debt here too")
        XCTAssertEqual(bucket.take(at: 0), 1, "wait until the debt is paid")
        XCTAssertNil(bucket.take(at: second * 4 / 10), "four tenths of a second pay it at 10/s")
        bucket.answered(fleet: 50, at: second)
        XCTAssertEqual(bucket.available(at: second), 10, "never more than the burst")
        bucket.refund()
        XCTAssertEqual(bucket.send(), 1, "a refund is not sent")
    }
}
