import HTTP1
import XCTest

final class ChunkedDecoderTests: XCTestCase {
    private let simple = bytes("5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n")

    func testSimple() throws {
        let result = try XCTUnwrap(try decodeChunked(simple))
        XCTAssertEqual(result.body, bytes("hello world"))
        XCTAssertEqual(result.trailers, HTTPFields())
        XCTAssertEqual(result.consumed, simple.count)
    }

    func testStepSequence() throws {
        var decoder = ChunkedDecoder()
        let input = bytes("3\r\nabc\r\n0\r\n\r\nNEXT")
        try input.withUnsafeBytes { buf in
            XCTAssertEqual(try decoder.next(buf), .chunkHeader(size: 3, consumed: 3))
            XCTAssertEqual(try decoder.next(UnsafeRawBufferPointer(rebasing: buf[3...])), .data(remaining: 3))
            decoder.consumeData(2)
            XCTAssertEqual(try decoder.next(UnsafeRawBufferPointer(start: nil, count: 0)), .data(remaining: 1))
            decoder.consumeData(1)
            XCTAssertEqual(try decoder.next(UnsafeRawBufferPointer(rebasing: buf[6...])), .chunkEnd(consumed: 2))
            XCTAssertFalse(decoder.isComplete)
            XCTAssertEqual(try decoder.next(UnsafeRawBufferPointer(rebasing: buf[8...])), .end(consumed: 5, trailers: HTTPFields()))
            XCTAssertTrue(decoder.isComplete)
            assertInvalid(try decoder.next(UnsafeRawBufferPointer(rebasing: buf[13...])))
        }
    }

    func testExtensionsIgnored() throws {
        let input = bytes("5;foo=bar\r\nhello\r\n5 ;\tx=\"q\"\r\n")  // second line has BWS: rejected
        assertInvalid(try decodeChunked(input))
        let ok = bytes("5;foo=bar\r\nhello\r\n3;a;b=\"c d\"\r\nxyz\r\n0;last\r\n\r\n")
        XCTAssertEqual(try decodeChunked(ok)?.body, bytes("helloxyz"))
    }

    func testUppercaseHex() throws {
        let data = [UInt8](repeating: 0x61, count: 0xAB)
        let input = bytes("AB\r\n") + data + bytes("\r\n0\r\n\r\n")
        XCTAssertEqual(try decodeChunked(input)?.body, data)
        let mixed = bytes("0000000000000001\r\nx\r\n000\r\n\r\n")
        XCTAssertEqual(try decodeChunked(mixed)?.body, bytes("x"))
    }

    func testOneByteAtATime() throws {
        let input = bytes("5;x=y\r\nhello\r\n1\r\n!\r\n0\r\nX-Sum: abc\r\n\r\n")
        let result = try XCTUnwrap(try decodeChunked(input, step: 1))
        XCTAssertEqual(result.body, bytes("hello!"))
        XCTAssertEqual(result.trailers.first("x-sum"), "abc")
        XCTAssertEqual(result.consumed, input.count)
    }

    func testTrailers() throws {
        let input = bytes("3\r\nabc\r\n0\r\nX-Checksum: 123\r\nX-Other:\t v \r\n\r\nGET / HTTP/1.1\r\n")
        let result = try XCTUnwrap(try decodeChunked(input))
        XCTAssertEqual(result.trailers.fields, [
            HTTPField(name: "X-Checksum", value: "123"),
            HTTPField(name: "X-Other", value: "v"),
        ])
        XCTAssertEqual(result.consumed, input.count - "GET / HTTP/1.1\r\n".utf8.count)
    }

    func testIncomplete() throws {
        XCTAssertNil(try decodeChunked(bytes("5\r\nhel")))
        XCTAssertNil(try decodeChunked(bytes("5\r\nhello\r\n0\r\nX: y\r\n")))
        XCTAssertNil(try decodeChunked(bytes("5")))
    }

    func testBadChunkSizes() {
        for line in ["0x5", "+5", "-5", " 5", "5 ", "5 ;x", "\t5", "g", "5g", "", "11111111111111111",
                     "8000000000000000", "FFFFFFFFFFFFFFFF", "00000000000000000"] {
            assertInvalid(try decodeChunked(bytes(line + "\r\nhello\r\n0\r\n\r\n")), line.debugDescription)
        }
        // 16 digits with the maximum value is fine as a size (we only check framing here).
        var decoder = ChunkedDecoder()
        XCTAssertEqual(try bytes("7FFFFFFFFFFFFFFF\r\n").withUnsafeBytes { try decoder.next($0) },
                       .chunkHeader(size: UInt64(Int64.max), consumed: 18))
    }

    func testMissingCRLFAfterData() {
        assertInvalid(try decodeChunked(bytes("5\r\nhelloXY0\r\n\r\n")))
        assertInvalid(try decodeChunked(bytes("5\r\nhello\rX0\r\n\r\n")))
        assertInvalid(try decodeChunked(bytes("5\r\nhello\n0\r\n\r\n")))
        assertInvalid(try decodeChunked(bytes("5\r\nhelloXY"), step: 1))
    }

    func testExtensionTooLong() throws {
        let decoder = ChunkedDecoder(maxExtensionLength: 8)
        XCTAssertEqual(try decodeChunked(bytes("1;1234567\r\nx\r\n0\r\n\r\n"), decoder: decoder)?.body, bytes("x"))
        assertInvalid(try decodeChunked(bytes("1;12345678\r\nx\r\n0\r\n\r\n"), decoder: decoder))
        // Rejected before the line is complete, so an endless extension cannot pile up.
        assertInvalid(try decodeChunked(bytes("1;12345678"), decoder: decoder))
        assertInvalid(try decodeChunked(bytes("1;ab\u{1}\r\nx\r\n0\r\n\r\n")))
    }

    func testBareLFInChunkLines() {
        assertInvalid(try decodeChunked(bytes("5\nhello\r\n0\r\n\r\n")))
        assertInvalid(try decodeChunked(bytes("5;a\nhello\r\n0\r\n\r\n")))
        assertInvalid(try decodeChunked(bytes("5\r\nhello\r\n0\n\r\n")))
        assertInvalid(try decodeChunked(bytes("5\r\nhello\r\n0\r\n\n")))
        assertInvalid(try decodeChunked(bytes("5\r\nhello\r\n0\r\nX: y\n\r\n")))
        assertInvalid(try decodeChunked(bytes("5\rhello\r\n0\r\n\r\n")))
    }

    func testTrailerLimits() throws {
        let decoder = ChunkedDecoder(maxTrailerBytes: 16, maxTrailerFields: 2)
        // "A: 1\r\nB: 2\r\n\r\n" is 14 bytes.
        XCTAssertEqual(try decodeChunked(bytes("0\r\nA: 1\r\nB: 2\r\n\r\n"), decoder: decoder)?.trailers.count, 2)
        assertInvalid(try decodeChunked(bytes("0\r\nA: 1\r\nB: 2\r\nC: 3\r\n\r\n"), decoder: ChunkedDecoder(maxTrailerFields: 2)))
        assertInvalid(try decodeChunked(bytes("0\r\nA: 123456789012\r\n\r\n"), decoder: decoder))
        // Exceeding the byte limit is detected before the section is complete.
        assertInvalid(try decodeChunked(bytes("0\r\nA: 1234567890123456789"), decoder: decoder))
    }

    func testMalformedTrailers() {
        for trailer in ["Bad Name: x", "NoColon", " folded", "X : y", "X: a\u{0}b", ": v"] {
            assertInvalid(try decodeChunked(bytes("0\r\n\(trailer)\r\n\r\n")), trailer.debugDescription)
        }
    }

    func testLargeChunkDataInPieces() throws {
        let data = (0..<10_000).map { UInt8(truncatingIfNeeded: $0) }
        let input = bytes("2710\r\n") + data + bytes("\r\n0\r\n\r\n")
        let result = try XCTUnwrap(try decodeChunked(input, step: 777))
        XCTAssertEqual(result.body, data)
    }
}
