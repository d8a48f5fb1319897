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

    // MARK: - a body that ends with its message (an HTTP/2 stream's)

    func testABodyThatEndsWithItsMessageMovesUnframedUntilTheEndAndKeepsItsTrailers() throws {
        let source = OwnedEventBuffer(), destination = OwnedEventBuffer()
        var relay = BodyRelay(untilMessageEnd: false, forwardTrailers: true)
        XCTAssertTrue(relay.awaitsMessageEnd)
        XCTAssertEqual(try relay.pump(from: source.buffer, to: destination.buffer, limit: 1 << 20), .needMore, "no end yet")
        source.buffer.append("0\r\nhel")
        XCTAssertEqual(try relay.pump(from: source.buffer, to: destination.buffer, limit: 1 << 20), .needMore)
        source.buffer.append("lo")
        relay.sourceEnded(trailers: HTTPFields([HTTPField(name: "grpc-status", value: "0")]))
        XCTAssertFalse(relay.awaitsMessageEnd)
        XCTAssertEqual(try relay.pump(from: source.buffer, to: destination.buffer, limit: 1 << 20), .complete)
        XCTAssertEqual(String(decoding: destination.buffer.peekBytes(max: 100), as: UTF8.self), "0\r\nhello", "bytes as they came: nothing decoded")
        XCTAssertEqual(relay.bodyBytes, 8)
        XCTAssertEqual(relay.takeTrailers(), HTTPFields([HTTPField(name: "grpc-status", value: "0")]))
        XCTAssertNil(relay.takeTrailers(), "given once")
    }

    func testABodyThatEndsWithItsMessageIsChunkedForAnHTTP1DestinationWithItsTrailersInTheLastChunk() throws {
        let source = OwnedEventBuffer(), destination = OwnedEventBuffer()
        var relay = BodyRelay(untilMessageEnd: true, forwardTrailers: true)
        source.buffer.append("abc")
        XCTAssertEqual(try relay.pump(from: source.buffer, to: destination.buffer, limit: 1 << 20), .needMore)
        relay.sourceEnded(trailers: HTTPFields([HTTPField(name: "grpc-status", value: "0")]))
        XCTAssertEqual(try relay.pump(from: source.buffer, to: destination.buffer, limit: 1 << 20), .complete)
        XCTAssertEqual(String(decoding: destination.buffer.peekBytes(max: 100), as: UTF8.self), "3\r\nabc\r\n0\r\ngrpc-status: 0\r\n\r\n")
        XCTAssertNil(relay.takeTrailers(), "they went in the last chunk")
    }

    func testAMessageEndWaitsForTheBytesBeforeItAndALimitHoldsThemBack() throws {
        let source = OwnedEventBuffer(), destination = OwnedEventBuffer()
        var relay = BodyRelay(untilMessageEnd: false, forwardTrailers: false)
        destination.buffer.append("full")
        source.buffer.append("rest")
        relay.sourceEnded(trailers: HTTPFields([HTTPField(name: "x-t", value: "1")]))
        XCTAssertEqual(try relay.pump(from: source.buffer, to: destination.buffer, limit: 4), .blocked, "the end is not before its bytes")
        destination.buffer.drain(4)
        XCTAssertEqual(try relay.pump(from: source.buffer, to: destination.buffer, limit: 4), .complete)
        XCTAssertEqual(destination.buffer.peekBytes(max: 100), Array("rest".utf8))
        XCTAssertNil(relay.takeTrailers(), "trailers not forwarded (a request's) are dropped")
    }

    func testAChunkedBodyToAnUnframedDestinationKeepsItsTrailersForIt() throws {
        let source = OwnedEventBuffer(), destination = OwnedEventBuffer()
        source.buffer.append("3\r\nabc\r\n0\r\nx-t: 1\r\n\r\n")
        var relay = BodyRelay(framing: .chunked, chunkedOutput: false, forwardTrailers: true)
        XCTAssertEqual(try relay.pump(from: source.buffer, to: destination.buffer, limit: 1 << 20), .complete)
        XCTAssertEqual(relay.takeTrailers(), HTTPFields([HTTPField(name: "x-t", value: "1")]))
    }
}
