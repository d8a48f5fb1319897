import EventLoop
import HTTP1
import XCTest
import HTTPMessage

final class BodyRelayTests: XCTestCase {
    func testContentLengthMovesExactlyTheBodyAndLeavesPipelinedBytes() throws {
        let source = OwnedEventBuffer(), destination = OwnedEventBuffer()
        source.buffer.append("helloGET /next")
        var relay = BodyRelay(framing: .contentLength(5), chunkedOutput: false, forwardTrailers: false)
        XCTAssertEqual(try relay.pump(from: source.buffer, to: destination.buffer, limit: 1 << 20), .complete)
        XCTAssertEqual(destination.buffer.peekBytes(max: 100), Array("hello".utf8))
        XCTAssertEqual(source.buffer.peekBytes(max: 100), Array("GET /next".utf8))
    }

    func testChunkedIsReframedAcrossArbitrarySplitsAndRequestTrailersDropped() throws {
        let wire = Array("5;ext=1\r\nhello\r\nA\r\n0123456789\r\n0\r\nX-Trailer: t\r\n\r\n".utf8)
        for split in 1..<wire.count {
            let source = OwnedEventBuffer(), destination = OwnedEventBuffer()
            var relay = BodyRelay(framing: .chunked, chunkedOutput: true, forwardTrailers: false)
            source.buffer.append(Array(wire[..<split]))
            var progress = try relay.pump(from: source.buffer, to: destination.buffer, limit: 1 << 20)
            if progress != .complete {
                source.buffer.append(Array(wire[split...]))
                progress = try relay.pump(from: source.buffer, to: destination.buffer, limit: 1 << 20)
            }
            XCTAssertEqual(progress, .complete, "split \(split)")
            let out = String(decoding: destination.buffer.peekBytes(max: 1000), as: UTF8.self)
            XCTAssertEqual(out, "5\r\nhello\r\na\r\n0123456789\r\n0\r\n\r\n", "split \(split)")
        }
    }

    func testChunkedToIdentityStripsFramingAndForwardsNothingElse() throws {
        let source = OwnedEventBuffer(), destination = OwnedEventBuffer()
        source.buffer.append("3\r\nabc\r\n0\r\n\r\n")
        var relay = BodyRelay(framing: .chunked, chunkedOutput: false, forwardTrailers: true)
        XCTAssertEqual(try relay.pump(from: source.buffer, to: destination.buffer, limit: 1 << 20), .complete)
        XCTAssertEqual(destination.buffer.peekBytes(max: 100), Array("abc".utf8))
        XCTAssertEqual(relay.bodyBytes, 3)
    }

    func testBackpressureStopsAtTheLimit() throws {
        let source = OwnedEventBuffer(), destination = OwnedEventBuffer()
        source.buffer.append([UInt8](repeating: 7, count: 1000))
        var relay = BodyRelay(framing: .contentLength(2000), chunkedOutput: false, forwardTrailers: false)
        // One move may overshoot by what the source holds (bounded by the read-ahead), then it stops.
        XCTAssertEqual(try relay.pump(from: source.buffer, to: destination.buffer, limit: 100), .blocked)
        XCTAssertEqual(destination.buffer.count, 1000)
        source.buffer.append([UInt8](repeating: 7, count: 10))
        XCTAssertEqual(try relay.pump(from: source.buffer, to: destination.buffer, limit: 100), .blocked)
        XCTAssertEqual(destination.buffer.count, 1000, "nothing moves while the destination is above the limit")
        destination.buffer.drain(destination.buffer.count)
        XCTAssertEqual(try relay.pump(from: source.buffer, to: destination.buffer, limit: 100), .needMore)
        source.buffer.append([UInt8](repeating: 7, count: 990))
        XCTAssertEqual(try relay.pump(from: source.buffer, to: destination.buffer, limit: 1 << 20), .complete)
        XCTAssertEqual(relay.bodyBytes, 2000)
    }

    func testCloseDelimitedEndsCleanlyOnlyAtClose() throws {
        let source = OwnedEventBuffer(), destination = OwnedEventBuffer()
        source.buffer.append("abc")
        var relay = BodyRelay(framing: .untilClose, chunkedOutput: true, forwardTrailers: true)
        XCTAssertEqual(try relay.pump(from: source.buffer, to: destination.buffer, limit: 1 << 20), .needMore)
        XCTAssertTrue(relay.finishAtClose(to: destination.buffer))
        XCTAssertEqual(String(decoding: destination.buffer.peekBytes(max: 100), as: UTF8.self), "3\r\nabc\r\n0\r\n\r\n")
        var fixed = BodyRelay(framing: .contentLength(10), chunkedOutput: false, forwardTrailers: false)
        XCTAssertFalse(fixed.finishAtClose(to: destination.buffer), "a short Content-Length body is a truncation")
    }

    func testMalformedChunkThrows() {
        let source = OwnedEventBuffer(), destination = OwnedEventBuffer()
        source.buffer.append("5\r\nhelloXX")
        var relay = BodyRelay(framing: .chunked, chunkedOutput: true, forwardTrailers: false)
        XCTAssertThrowsError(try relay.pump(from: source.buffer, to: destination.buffer, limit: 1 << 20))
    }
}
