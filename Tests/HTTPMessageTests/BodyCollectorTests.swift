import HTTPMessage
import EventLoop

import XCTest

final class BodyCollectorTests: XCTestCase {
    func testContentLengthWaitsForAllBytes() {
        let input = OwnedEventBuffer()
        var reader = BodyCollector(framing: .contentLength(5), limit: 100)
        input.buffer.append("hel")
        XCTAssertEqual(reader.read(from: input.buffer), .needMore)
        input.buffer.append("loGET")
        XCTAssertEqual(reader.read(from: input.buffer), .complete(Array("hello".utf8)))
        XCTAssertEqual(input.buffer.peekBytes(max: 10), Array("GET".utf8), "the next request stays buffered")
    }

    func testNoBody() {
        let input = OwnedEventBuffer()
        var reader = BodyCollector(framing: .none, limit: 0)
        XCTAssertEqual(reader.read(from: input.buffer), .complete([]))
    }

    func testChunkedAcrossReads() {
        let input = OwnedEventBuffer()
        var reader = BodyCollector(framing: .chunked, limit: 100)
        let wire = Array("4\r\nWiki\r\n5;x=y\r\npedia\r\n0\r\nT: 1\r\n\r\nNEXT".utf8)
        var outcome = BodyCollector.Outcome.needMore
        for byte in wire {  // one byte at a time: every split point
            input.buffer.append([byte])
            if outcome == .needMore { outcome = reader.read(from: input.buffer) }
        }
        XCTAssertEqual(outcome, .complete(Array("Wikipedia".utf8)))
        XCTAssertEqual(input.buffer.peekBytes(max: 10), Array("NEXT".utf8))
    }

    func testLimits() {
        XCTAssertTrue(BodyCollector(framing: .contentLength(11), limit: 10).declaredTooLarge)
        XCTAssertFalse(BodyCollector(framing: .contentLength(10), limit: 10).declaredTooLarge)
        let input = OwnedEventBuffer()
        var reader = BodyCollector(framing: .chunked, limit: 10)
        input.buffer.append("6\r\nabcdef\r\n5\r\n")
        XCTAssertEqual(reader.read(from: input.buffer), .tooLarge)
        let huge = OwnedEventBuffer()
        var hugeReader = BodyCollector(framing: .chunked, limit: 10)
        huge.buffer.append("7fffffffffff\r\n")
        XCTAssertEqual(hugeReader.read(from: huge.buffer), .tooLarge)
    }

    func testBrokenChunkedFraming() {
        let input = OwnedEventBuffer()
        var reader = BodyCollector(framing: .chunked, limit: 100)
        input.buffer.append("3\r\nabcX\r\n")
        guard case .invalid = reader.read(from: input.buffer) else { return XCTFail("expected invalid") }
    }
}

/// Bodies that end with the connection (token responses without a length).
final class BodyCollectorCloseTests: XCTestCase {
    func testABodyUntilCloseCompletesAtTheClose() {
        let input = OwnedEventBuffer()
        var collector = BodyCollector(framing: .untilClose, limit: 100)
        XCTAssertTrue(collector.endsAtClose)
        input.buffer.append("{\"access_token\":")
        XCTAssertEqual(collector.read(from: input.buffer), .needMore)
        input.buffer.append("\"t\"}")
        XCTAssertEqual(collector.read(from: input.buffer), .needMore)
        XCTAssertEqual(collector.finishAtClose(), .complete(Array("{\"access_token\":\"t\"}".utf8)))
    }

    func testACloseCutsShortABodyWithALength() {
        let input = OwnedEventBuffer()
        var collector = BodyCollector(framing: .contentLength(10), limit: 100)
        input.buffer.append("abc")
        XCTAssertEqual(collector.read(from: input.buffer), .needMore)
        XCTAssertEqual(collector.finishAtClose(), .needMore, "a short body is not complete")
    }

    func testABodyUntilCloseBeyondTheLimitIsTooLarge() {
        let input = OwnedEventBuffer()
        var collector = BodyCollector(framing: .untilClose, limit: 4)
        input.buffer.append("12345")
        XCTAssertEqual(collector.read(from: input.buffer), .tooLarge)
    }
}
