import TokenManager
import XCTest

/// The fleet-wide single flight without a store or clock: adopt, lease won/lost/expired/stolen,
/// corrupt entries, rejection, and a store failure at every step.
final class SharedTokenStateTests: XCTestCase {
    private let t0 = ContinuousClock.now
    private let wall0 = 1_800_000_000.0

    private func state() -> SharedTokenState {
        SharedTokenState(waitLimit: .seconds(2), pollInterval: .milliseconds(50), leaseTTL: .seconds(11))
    }

    /// An entry issued `age` seconds before wall0 with a 100 s lifetime.
    private func entry(_ value: String, age: Double = 0, sealed: [UInt8] = [1, 2, 3]) -> SharedTokenEntry {
        SharedTokenEntry(value: value, issuedAtWall: wall0 - age, lifetime: .seconds(100), sealed: sealed)
    }

    private func at(_ seconds: Double) -> ContinuousClock.Instant { t0 + .milliseconds(Int64(seconds * 1000)) }

    private func read(_ machine: inout SharedTokenState, _ result: SharedTokenState.ReadResult, _ seconds: Double = 0) -> [SharedTokenAction] {
        machine.entryRead(result, now: at(seconds), wallNow: wall0 + seconds)
    }

    func testFreshEntryIsAdoptedWithoutFetch() {
        var machine = state()
        XCTAssertEqual(machine.need(.start, now: at(0)), [.read])
        XCTAssertEqual(machine.need(.start, now: at(0)), [], "one flight at a time")
        let found = entry("A", age: 10)
        XCTAssertEqual(read(&machine, .found(found)), [.adopt(found)])
        XCTAssertEqual(machine.phase, .idle)
        XCTAssertEqual(machine.counts.hits, 1)
        XCTAssertEqual(machine.counts.leaseWon, 0)
    }

    func testMissTakesLeaseRechecksFetchesWritesReleases() {
        var machine = state()
        _ = machine.need(.start, now: at(0))
        XCTAssertEqual(read(&machine, .missing), [.acquireLease(ttl: .seconds(11))])
        XCTAssertEqual(machine.leaseResult(.won, now: at(0)), [.read], "reads again while holding the lease")
        XCTAssertEqual(read(&machine, .missing), [.fetch])
        let token = IssuedToken(value: "B", issuedAt: at(0), lifetime: .seconds(100))
        XCTAssertEqual(machine.fetchFinished(token, now: at(0.1)), [.write(token), .releaseLease])
        XCTAssertEqual(machine.phase, .idle)
        XCTAssertFalse(machine.holdsLease)
        XCTAssertEqual(machine.counts.misses, 2)
        XCTAssertEqual(machine.counts.leaseWon, 1)
    }

    func testRecheckAfterWinningFindsAnotherReplicasToken() {
        var machine = state()
        _ = machine.need(.start, now: at(0))
        _ = read(&machine, .missing)
        _ = machine.leaseResult(.won, now: at(0))
        let found = entry("C")
        XCTAssertEqual(read(&machine, .found(found)), [.adopt(found), .releaseLease])
    }

    func testLostLeaseWaitsAndAdoptsTheHoldersToken() {
        var machine = state()
        _ = machine.need(.start, now: at(0))
        _ = read(&machine, .missing)
        XCTAssertEqual(machine.leaseResult(.lost, now: at(0)), [.schedulePoll(at: at(0.05))])
        XCTAssertEqual(machine.phase, .waiting)
        XCTAssertEqual(machine.pollFired(now: at(0.05)), [.read])
        XCTAssertEqual(read(&machine, .missing, 0.05), [.acquireLease(ttl: .seconds(11))])
        XCTAssertEqual(machine.leaseResult(.lost, now: at(0.06)), [.schedulePoll(at: at(0.11))])
        XCTAssertEqual(machine.pollFired(now: at(0.11)), [.read])
        let found = entry("D")
        XCTAssertEqual(read(&machine, .found(found), 0.11), [.adopt(found)])
        XCTAssertEqual(machine.counts.leaseWaited, 1, "one wait per flight")
        XCTAssertEqual(machine.counts.fallbacks, 0)
    }

    func testExpiredLeaseIsTakenOver() {
        var machine = state()
        _ = machine.need(.start, now: at(0))
        _ = read(&machine, .missing)
        _ = machine.leaseResult(.lost, now: at(0))
        _ = machine.pollFired(now: at(0.05))
        _ = read(&machine, .missing, 0.05)
        XCTAssertEqual(machine.leaseResult(.won, now: at(0.06)), [.read], "the holder died: its lease expired")
        XCTAssertEqual(read(&machine, .missing, 0.06), [.fetch])
        XCTAssertEqual(machine.counts.leaseExpired, 1)
    }

    func testWaitIsBoundedThenFetchesItself() {
        var machine = state()
        _ = machine.need(.start, now: at(0))
        _ = read(&machine, .missing)
        _ = machine.leaseResult(.lost, now: at(0))
        _ = machine.pollFired(now: at(1.98))
        _ = read(&machine, .missing, 1.98)
        XCTAssertEqual(machine.leaseResult(.lost, now: at(1.99)), [.schedulePoll(at: at(2))], "never past the limit")
        _ = machine.pollFired(now: at(2))
        XCTAssertEqual(read(&machine, .missing, 2), [.fetch])
        XCTAssertEqual(machine.counts.fallbacks, 1)
        XCTAssertEqual(machine.fetchFinished(nil, now: at(2.1)), [], "a failed fetch holds no lease to release")
    }

    /// A holder whose lease expired mid-fetch and was taken by another replica still writes its
    /// token and releases with compare-and-delete (the store leaves the thief's lease alone).
    func testStolenLeaseStillWritesAndReleasesOnlyItsOwn() {
        var machine = state()
        _ = machine.need(.start, now: at(0))
        _ = read(&machine, .missing)
        _ = machine.leaseResult(.won, now: at(0))
        _ = read(&machine, .missing)
        let token = IssuedToken(value: "E", issuedAt: at(0), lifetime: .seconds(100))
        XCTAssertEqual(machine.fetchFinished(token, now: at(12)), [.write(token), .releaseLease])
        XCTAssertEqual(machine.storeFinished(ok: true), [])
    }

    func testCorruptEntryIsAMiss() {
        var machine = state()
        _ = machine.need(.start, now: at(0))
        XCTAssertEqual(read(&machine, .corrupt), [.acquireLease(ttl: .seconds(11))])
        XCTAssertEqual(machine.counts.corrupt, 1)
        XCTAssertEqual(machine.counts.misses, 1)
        XCTAssertEqual(machine.counts.hits, 0)
    }

    func testExpiredEntryIsAMiss() {
        var machine = state()
        _ = machine.need(.start, now: at(0))
        XCTAssertEqual(read(&machine, .found(entry("old", age: 95))), [.acquireLease(ttl: .seconds(11))], "past usable-until")
    }

    func testRefreshIgnoresAnEntryDueForRefresh() {
        var machine = state()
        _ = machine.need(.refresh, now: at(0))
        XCTAssertEqual(read(&machine, .found(entry("same", age: 79))), [.acquireLease(ttl: .seconds(11))])
        machine = state()
        _ = machine.need(.refresh, now: at(0))
        let newer = entry("newer", age: 1)
        XCTAssertEqual(read(&machine, .found(newer)), [.adopt(newer)], "another replica refreshed first")
    }

    func testRejectedTokenIsDeletedByItsSealedBytesAndReplaced() {
        var machine = state()
        _ = machine.need(.rejected("R"), now: at(0))
        XCTAssertEqual(read(&machine, .found(entry("R", sealed: [9, 9]))), [.deleteIfEqual([9, 9]), .acquireLease(ttl: .seconds(11))])
        _ = machine.leaseResult(.won, now: at(0))
        XCTAssertEqual(read(&machine, .missing), [.fetch])
        machine = state()
        _ = machine.need(.rejected("R"), now: at(0))
        let replacement = entry("S")
        XCTAssertEqual(read(&machine, .found(replacement)), [.adopt(replacement)], "the fleet already switched")
    }

    func testStoreFailureAtEveryStepFallsBackOnceAndRecovers() {
        // The first read.
        var machine = state()
        _ = machine.need(.start, now: at(0))
        XCTAssertEqual(read(&machine, .failed), [.availabilityChanged(false), .fetch])
        XCTAssertEqual(machine.counts.fallbacks, 1)
        XCTAssertEqual(machine.fetchFinished(IssuedToken(value: "F", issuedAt: at(0), lifetime: .seconds(100)), now: at(0.1)),
                       [.write(IssuedToken(value: "F", issuedAt: at(0), lifetime: .seconds(100)))])
        XCTAssertEqual(machine.storeFinished(ok: false), [], "logged once per change")
        _ = machine.need(.start, now: at(1))
        XCTAssertEqual(read(&machine, .missing, 1), [.availabilityChanged(true), .acquireLease(ttl: .seconds(11))])

        // The lease.
        machine = state()
        _ = machine.need(.start, now: at(0))
        _ = read(&machine, .missing)
        XCTAssertEqual(machine.leaseResult(.failed, now: at(0)), [.availabilityChanged(false), .fetch])

        // The re-read while holding the lease: fetch, then release.
        machine = state()
        _ = machine.need(.start, now: at(0))
        _ = read(&machine, .missing)
        _ = machine.leaseResult(.won, now: at(0))
        XCTAssertEqual(read(&machine, .failed), [.availabilityChanged(false), .fetch])
        XCTAssertEqual(machine.fetchFinished(nil, now: at(0.1)), [.releaseLease])

        // A poll while waiting.
        machine = state()
        _ = machine.need(.start, now: at(0))
        _ = read(&machine, .missing)
        _ = machine.leaseResult(.lost, now: at(0))
        _ = machine.pollFired(now: at(0.05))
        XCTAssertEqual(read(&machine, .failed, 0.05), [.availabilityChanged(false), .fetch])

        // Write and release failures only count.
        machine = state()
        XCTAssertEqual(machine.storeFinished(ok: false), [.availabilityChanged(false)])
        XCTAssertEqual(machine.counts.errors, 1)
        XCTAssertEqual(machine.storeFinished(ok: true), [.availabilityChanged(true)])
    }

    func testLateEventsAreIgnored() {
        var machine = state()
        XCTAssertEqual(read(&machine, .missing), [])
        XCTAssertEqual(machine.leaseResult(.won, now: at(0)), [])
        XCTAssertEqual(machine.pollFired(now: at(0)), [])
        XCTAssertEqual(machine.fetchFinished(nil, now: at(0)), [])
        XCTAssertFalse(machine.holdsLease)
    }

    /// A rotating refresh token is spent once: its flight fetches only under the lease — a store
    /// failure reads again later, the wait never runs out into a fetch of one's own — and keeps
    /// the lease after its fetch until the fleet's entry is written.
    func testAnExclusiveFlightFetchesOnlyUnderTheLease() {
        var machine = SharedTokenState(waitLimit: .seconds(2), pollInterval: .milliseconds(50), leaseTTL: .seconds(11), exclusive: true)
        _ = machine.need(.refresh, now: at(0))
        XCTAssertEqual(read(&machine, .failed), [.availabilityChanged(false), .schedulePoll(at: at(0.5))], "no fetch alone")
        XCTAssertEqual(machine.pollFired(now: at(0.5)), [.read])
        XCTAssertEqual(read(&machine, .missing, 0.5), [.availabilityChanged(true), .acquireLease(ttl: .seconds(11))])
        XCTAssertEqual(machine.leaseResult(.failed, now: at(0.6)), [.availabilityChanged(false), .schedulePoll(at: at(1.1))])
        _ = machine.pollFired(now: at(1.1))
        _ = read(&machine, .missing, 1.1)
        // Another replica holds the lease for longer than the wait limit: still no fetch.
        for second in stride(from: 1.2, through: 5.0, by: 0.5) {
            XCTAssertEqual(machine.leaseResult(.lost, now: at(second)).contains(.fetch), false)
            _ = machine.pollFired(now: at(second))
            XCTAssertFalse(read(&machine, .missing, second).contains(.fetch), "at \(second) s")
        }
        // The lease expired: taken, read again, fetched, written, and kept.
        XCTAssertEqual(machine.leaseResult(.won, now: at(12)), [.read])
        XCTAssertEqual(read(&machine, .missing, 12), [.fetch])
        let token = IssuedToken(value: "R", issuedAt: at(12), lifetime: .seconds(100))
        XCTAssertEqual(machine.fetchFinished(token, now: at(12.1)), [.write(token)], "the lease is held until the entry is written")
        XCTAssertEqual(machine.phase, .idle)
        XCTAssertEqual(machine.entryWritten(ok: false), [.availabilityChanged(false)], "not written: kept (it expires)")
        XCTAssertEqual(machine.entryWritten(ok: true), [.availabilityChanged(true), .releaseLease], "written again: released")
        XCTAssertFalse(machine.holdsLease)
    }

    /// A refresh answered with an access token that is already over (a short lifetime, a slow
    /// answer) still rotated the refresh token: the entry carrying it is written and the lease
    /// kept until it is, or the next replica would spend the old refresh token (invalid_grant,
    /// and a server with reuse protection revokes the family).
    func testAnExclusiveFlightSharesARotationWhoseAccessTokenIsAlreadyOver() {
        var machine = SharedTokenState(waitLimit: .seconds(2), pollInterval: .milliseconds(50), leaseTTL: .seconds(11), exclusive: true)
        _ = machine.need(.refresh, now: at(0))
        _ = read(&machine, .missing)
        XCTAssertEqual(machine.leaseResult(.won, now: at(0)), [.read])
        XCTAssertEqual(read(&machine, .missing), [.fetch])
        let over = IssuedToken(value: "R", issuedAt: at(0), lifetime: .seconds(4))
        XCTAssertEqual(machine.fetchFinished(over, now: at(12)), [.write(over)], "written, and the lease held")
        XCTAssertTrue(machine.holdsLease)
        XCTAssertEqual(machine.entryWritten(ok: true), [.releaseLease])
        // Not exclusive: an access token that is over is not shared, and the lease goes at once.
        var plain = state()
        _ = plain.need(.start, now: at(0))
        _ = read(&plain, .missing)
        _ = plain.leaseResult(.won, now: at(0))
        _ = read(&plain, .missing)
        XCTAssertEqual(plain.fetchFinished(over, now: at(12)), [.releaseLease])
    }
}
