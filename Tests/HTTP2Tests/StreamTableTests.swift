import HTTP2
import XCTest

/// The stream table against a `Dictionary` doing the same things.
final class StreamTableTests: XCTestCase {
    private func assertSame(_ table: StreamTable<String>, _ model: [Int32: String], line: UInt = #line) {
        XCTAssertEqual(table.count, model.count, line: line)
        XCTAssertEqual(table.isEmpty, model.isEmpty, line: line)
        var seen: [Int32: String] = [:]
        for (key, value) in table {
            XCTAssertNil(seen[key], "\(key) iterated twice", line: line)
            seen[key] = value
        }
        XCTAssertEqual(seen, model, line: line)
        for (key, value) in model { XCTAssertEqual(table[key], value, line: line) }
    }

    func testAConnectionsStreamsComeAndGoAsInADictionary() {
        // Odd ids opened in order, closed out of order, as an app's streams are: many times
        // round a small table, so runs wrap its end and removals shift entries back.
        var table = StreamTable<String>()
        var model: [Int32: String] = [:]
        var generator = SystemRandomNumberGenerator()
        var next: Int32 = 1
        for step in 0..<20_000 {
            if model.count < 40 && (model.isEmpty || Bool.random(using: &generator)) {
                table[next] = "s\(next)"
                model[next] = "s\(next)"
                next += 2
            } else {
                let victim = model.keys.randomElement(using: &generator)!
                XCTAssertEqual(table.removeValue(forKey: victim), model.removeValue(forKey: victim))
            }
            if step % 997 == 0 { assertSame(table, model) }
            XCTAssertNil(table[next], "a stream not opened yet")
        }
        assertSame(table, model)
    }

    func testReplacingRemovingAbsentIdsAndEmptying() {
        var table = StreamTable<String>()
        XCTAssertNil(table[1])
        XCTAssertNil(table.removeValue(forKey: 1), "nothing to remove from an empty table")
        table[3] = "a"
        table[3] = "b"
        XCTAssertEqual(table[3], "b")
        XCTAssertEqual(table.count, 1)
        table[5] = nil
        XCTAssertEqual(table.count, 1, "setting nil for an absent id changes nothing")
        for id in stride(from: Int32(7), through: 401, by: 2) { table[id] = "\(id)" }
        let copy = table
        XCTAssertTrue(table.containsKey { $0 > 400 })
        XCTAssertFalse(table.containsKey { $0 > 401 })
        table.removeAll()
        XCTAssertTrue(table.isEmpty)
        XCTAssertNil(table[3])
        XCTAssertEqual(copy.count, 199, "a copy keeps what the table held")
        XCTAssertEqual(copy.allValues.count, 199)
        table[Int32.max] = "last"
        XCTAssertEqual(table[Int32.max], "last", "the largest stream id")
        // 0 (the connection's id) marks an empty slot: never found, never removed.
        XCTAssertNil(table[0])
        XCTAssertNil(table.removeValue(forKey: 0))
        table[0] = nil
        XCTAssertEqual(table.count, 1, "looking for 0 takes nothing away")
        XCTAssertEqual(table[Int32.max], "last")
    }

    private final class Stream {
        let id: Int32
        init(_ id: Int32) { self.id = id }
    }

    func testAStreamTakenOutIsNoLongerKeptAndTheOthersStayFound() {
        // Enough streams that runs form and removals shift entries back over the gap.
        var table = StreamTable<Stream>()
        var gone: [Int32: () -> Stream?] = [:]
        for id in stride(from: Int32(1), through: 95, by: 2) {
            let stream = Stream(id)
            weak let watched = stream
            gone[id] = { watched }
            table[id] = stream
        }
        for id in stride(from: Int32(1), through: 95, by: 6) {
            XCTAssertEqual(table.removeValue(forKey: id)?.id, id)
            XCTAssertNil(gone[id]!(), "stream \(id): the table let go of it once taken out")
        }
        for id in stride(from: Int32(1), through: 95, by: 2) {
            let kept = (id - 1) % 6 != 0
            XCTAssertEqual(table[id]?.id, kept ? id : nil, "stream \(id)")
            XCTAssertEqual(gone[id]!() != nil, kept, "stream \(id) alive only while in the table")
        }
        table.removeAll()
        XCTAssertTrue(gone.values.allSatisfy { $0() == nil }, "emptied, the table keeps none")
    }
}
