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

/// Tasks scheduled during a socket's read callback run at its end, in order, before the writes
/// that callback and they queued leave, and before the loop polls again; one cancelled or freed
/// while it waits never runs.
final class LoopTaskReadEndTests: XCTestCase {
    /// A delegate that runs `onRead` for each read.
    private final class Reader: ConnectionDelegate {
        var onRead: (any ByteStream) -> Void = { _ in }
        func connectionDidRead(_ connection: any ByteStream) { onRead(connection) }
        func connection(_ connection: any ByteStream, didEnd reason: ConnectionEnd) { connection.close() }
    }

    /// A loop with an accepted connection reading with `reader`, and a client connected to it
    /// that collects what comes back (into `received`) and the order of things (`order`).
    private func withConnection(_ body: (EventLoop, Reader, any ByteStream, @escaping () -> [UInt8]) throws -> Void) throws {
        let loop = try EventLoop()
        let reader = Reader()
        var accepted: [any ByteStream] = []
        let listener = try Listener(address: SocketAddress(host: "127.0.0.1", port: 0), on: loop) { connection in
            connection.delegate = reader
            connection.startReading()
            accepted.append(connection)
        }
        final class Client: ConnectionDelegate {
            var received: [UInt8] = []
            func connectionDidRead(_ connection: any ByteStream) {
                received += connection.input.peekBytes(max: connection.input.count)
                connection.input.drain(connection.input.count)
            }
            func connection(_ connection: any ByteStream, didEnd reason: ConnectionEnd) { connection.close() }
        }
        let client = Client()
        let connection = try XCTUnwrap(Connection.connect(host: "127.0.0.1", port: listener.address.port, on: loop, delegate: client))
        connection.startReading()
        try body(loop, reader, connection, { client.received })
        withExtendedLifetime((listener, accepted)) {}
    }

    func testTasksScheduledDuringAReadRunAtItsEndInOrderBeforeItsWritesAndTheNextPoll() throws {
        try withConnection { loop, reader, client, received in
            var order: [String] = []
            let first = LoopTask(on: loop) {}
            let second = LoopTask(on: loop) { order.append("second") }
            let zeroTimer = Timer(on: loop) { order.append("zero timer") }
            var serverSide: (any ByteStream)?
            reader.onRead = { connection in
                serverSide = connection
                connection.input.drain(connection.input.count)
                zeroTimer.schedule(after: .zero)
                first.schedule()
                first.schedule()
                order.append("read")
                // What a task writes leaves with the callback's own write, in this iteration.
                connection.write(Array("a".utf8))
            }
            first.action = {
                order.append("first")
                serverSide?.write(Array("b".utf8))
                second.schedule()  // scheduled while the tasks run: runs in the same pass
            }
            client.write(Array("go".utf8))
            let stop = Timer(on: loop, after: .milliseconds(300)) { loop.stop() }
            loop.run()
            XCTAssertEqual(order, ["read", "first", "second", "zero timer"], "at the read's end, once each, before the next poll's timer")
            XCTAssertEqual(String(decoding: received(), as: UTF8.self), "ab")
            XCTAssertFalse(first.isScheduled || second.isScheduled)
            withExtendedLifetime((first, second, zeroTimer, stop)) {}
        }
    }

    func testATaskCancelledOrFreedWhileItWaitsForTheReadsEndNeverRuns() throws {
        try withConnection { loop, reader, client, _ in
            var runs: [String] = []
            let cancelled = LoopTask(on: loop) { runs.append("cancelled") }
            var freed: LoopTask? = LoopTask(on: loop) { runs.append("freed") }
            let kept = LoopTask(on: loop) { runs.append("kept") }
            reader.onRead = { connection in
                connection.input.drain(connection.input.count)
                cancelled.schedule()
                freed?.schedule()
                kept.schedule()
                cancelled.cancel()
                freed = nil
            }
            client.write(Array("go".utf8))
            let stop = Timer(on: loop, after: .milliseconds(200)) { loop.stop() }
            loop.run()
            XCTAssertEqual(runs, ["kept"])
            cancelled.schedule()
            XCTAssertFalse(cancelled.isScheduled, "a cancelled task stays cancelled")
            withExtendedLifetime((cancelled, kept, stop)) {}
        }
    }

    func testTasksOfSeveralReadsInOnePollRunOnceAfterTheLastOfThem() throws {
        // Two connections ready in the same poll: the task both reads schedule runs once, after
        // both reads (what a connection's turn gathers), not after the first.
        let loop = try EventLoop()
        var order: [String] = []
        let task = LoopTask(on: loop) { order.append("task") }
        final class Reader: ConnectionDelegate {
            let name: String
            let onRead: (String) -> Void
            init(_ name: String, _ onRead: @escaping (String) -> Void) { self.name = name; self.onRead = onRead }
            func connectionDidRead(_ connection: any ByteStream) {
                connection.input.drain(connection.input.count)
                onRead(name)
            }
            func connection(_ connection: any ByteStream, didEnd reason: ConnectionEnd) { connection.close() }
        }
        var accepted: [any ByteStream] = []
        var readers: [Reader] = []
        let listener = try Listener(address: SocketAddress(host: "127.0.0.1", port: 0), on: loop) { connection in
            let reader = Reader("read \(accepted.count)") { name in
                order.append(name)
                task.schedule()
            }
            readers.append(reader)
            connection.delegate = reader
            accepted.append(connection)
        }
        final class Quiet: ConnectionDelegate {
            func connectionDidRead(_ connection: any ByteStream) {}
            func connection(_ connection: any ByteStream, didEnd reason: ConnectionEnd) { connection.close() }
        }
        let quiet = Quiet()
        let a = try XCTUnwrap(Connection.connect(host: "127.0.0.1", port: listener.address.port, on: loop, delegate: quiet))
        let b = try XCTUnwrap(Connection.connect(host: "127.0.0.1", port: listener.address.port, on: loop, delegate: quiet))
        a.write(Array("1".utf8))
        b.write(Array("2".utf8))
        // Both accepted and their bytes there before either reads: reading starts for both in
        // one callback, so the next poll finds both ready.
        let startReads = Timer(on: loop, after: .milliseconds(150)) {
            XCTAssertEqual(accepted.count, 2)
            for connection in accepted { connection.startReading() }
        }
        let stop = Timer(on: loop, after: .milliseconds(400)) { loop.stop() }
        loop.run()
        XCTAssertEqual(order.filter { $0 == "task" }.count, 1, "\(order)")
        XCTAssertEqual(order.last, "task", "after both reads: \(order)")
        XCTAssertEqual(Set(order.dropLast()), ["read 0", "read 1"])
        withExtendedLifetime((listener, accepted, readers, a, b, startReads, stop)) {}
    }
}
