import EventLoop
import HTTP1
import HTTPMessage
import XCTest

/// The one head-reading loop: a head delivered in any split is read once, exactly, and what
/// follows it stays buffered; limits and malformed heads throw without draining.
final class HeadReaderTests: XCTestCase {
    private let wire = Array("GET /a HTTP/1.1\r\nHost: x\r\nX-Long: \(String(repeating: "v", count: 300))\r\n\r\nNEXT".utf8)

    func testAHeadSplitAtEveryByteIsReadOnceAndLeavesWhatFollows() throws {
        for split in 1..<(wire.count - 4) {
            let input = OwnedEventBuffer()
            var reader = HeadReader(limit: 4096)
            input.buffer.append(Array(wire[..<split]))
            var parses = 0
            let parse = { (bytes: UnsafeRawBufferPointer) throws(HTTPParseError) -> RequestHead in
                parses += 1
                return try RequestHeadParser.parse(bytes)
            }
            XCTAssertNil(try reader.read(from: input.buffer, parse), "split \(split)")
            XCTAssertEqual(input.buffer.count, split, "nothing drained while incomplete")
            input.buffer.append(Array(wire[split...]))
            let head = try XCTUnwrap(reader.read(from: input.buffer, parse))
            XCTAssertEqual(head.method, "GET")
            XCTAssertEqual(parses, 1, "the parser sees exactly one complete head")
            XCTAssertEqual(input.buffer.peekBytes(max: 10), Array("NEXT".utf8), "split \(split)")
        }
    }

    func testConsecutiveHeadsAreReadInOrder() throws {
        let input = OwnedEventBuffer()
        var reader = HeadReader(limit: 4096)
        input.buffer.append("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")
        let parse = { (bytes: UnsafeRawBufferPointer) throws(HTTPParseError) -> Int in
            try ResponseHeadParser.parse(bytes, requestMethod: "GET").status
        }
        XCTAssertEqual(try reader.read(from: input.buffer, parse), 100)
        XCTAssertEqual(try reader.read(from: input.buffer, parse), 200)
        XCTAssertNil(try reader.read(from: input.buffer, parse))
        XCTAssertTrue(input.buffer.isEmpty)
    }

    func testAHeadBeyondTheLimitAndAMalformedOneThrow() {
        let big = OwnedEventBuffer()
        var reader = HeadReader(limit: 64)
        big.buffer.append(Array(wire))
        XCTAssertThrowsError(try reader.read(from: big.buffer) { (bytes) throws(HTTPParseError) in try RequestHeadParser.parse(bytes) }) {
            XCTAssertEqual($0 as? HTTPParseError, .headTooLarge)
        }
        let bad = OwnedEventBuffer()
        var other = HeadReader(limit: 4096)
        bad.buffer.append("GET / HTTP/1.1\nHost: x\r\n\r\n")
        XCTAssertThrowsError(try other.read(from: bad.buffer) { (bytes) throws(HTTPParseError) in try RequestHeadParser.parse(bytes) },
                             "a bare LF is refused (a smuggling vector)")
        XCTAssertEqual(bad.buffer.count, 26, "nothing drained")
    }
}
