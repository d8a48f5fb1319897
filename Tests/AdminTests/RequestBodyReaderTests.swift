@testable import Admin
import EventLoop
import TestSupport
import XCTest

final class RequestBodyReaderTests: XCTestCase {
    func testContentLengthWaitsForAllBytes() {
        let input = OwnedEventBuffer()
        var reader = RequestBodyReader(framing: .contentLength(5), limit: 100)
        input.buffer.append("hel")
        XCTAssertEqual(reader.read(from: input.buffer), .needMore)
        input.buffer.append("loGET")
        XCTAssertEqual(reader.read(from: input.buffer), .complete(Array("hello".utf8)))
        XCTAssertEqual(input.buffer.peekBytes(max: 10), Array("GET".utf8), "the next request stays buffered")
    }

    func testNoBody() {
        let input = OwnedEventBuffer()
        var reader = RequestBodyReader(framing: .none, limit: 0)
        XCTAssertEqual(reader.read(from: input.buffer), .complete([]))
    }

    func testChunkedAcrossReads() {
        let input = OwnedEventBuffer()
        var reader = RequestBodyReader(framing: .chunked, limit: 100)
        let wire = Array("4\r\nWiki\r\n5;x=y\r\npedia\r\n0\r\nT: 1\r\n\r\nNEXT".utf8)
        var outcome = RequestBodyReader.Outcome.needMore
        for byte in wire {  // one byte at a time: every split point
            input.buffer.append([byte])
            if outcome == .needMore { outcome = reader.read(from: input.buffer) }
        }
        XCTAssertEqual(outcome, .complete(Array("Wikipedia".utf8)))
        XCTAssertEqual(input.buffer.peekBytes(max: 10), Array("NEXT".utf8))
    }

    func testLimits() {
        XCTAssertTrue(RequestBodyReader(framing: .contentLength(11), limit: 10).declaredTooLarge)
        XCTAssertFalse(RequestBodyReader(framing: .contentLength(10), limit: 10).declaredTooLarge)
        let input = OwnedEventBuffer()
        var reader = RequestBodyReader(framing: .chunked, limit: 10)
        input.buffer.append("6\r\nabcdef\r\n5\r\n")
        XCTAssertEqual(reader.read(from: input.buffer), .tooLarge)
        let huge = OwnedEventBuffer()
        var hugeReader = RequestBodyReader(framing: .chunked, limit: 10)
        huge.buffer.append("7fffffffffff\r\n")
        XCTAssertEqual(hugeReader.read(from: huge.buffer), .tooLarge)
    }

    func testBrokenChunkedFraming() {
        let input = OwnedEventBuffer()
        var reader = RequestBodyReader(framing: .chunked, limit: 100)
        input.buffer.append("3\r\nabcX\r\n")
        guard case .invalid = reader.read(from: input.buffer) else { return XCTFail("expected invalid") }
    }
}
