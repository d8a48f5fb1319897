import HTTP1
import XCTest

/// Prefix/split "fuzzing": every truncation and every split point of valid input must give
/// `nil` / `.needMore` until complete, then exactly the same result as the whole input.
final class FuzzTests: XCTestCase {
    private let first = "POST /upload HTTP/1.1\r\nHost: a.test\r\nTransfer-Encoding: chunked\r\n\r\n"
    private let body = "5;ext=1\r\nhello\r\nA\r\n0123456789\r\n0\r\nX-T: 1\r\n\r\n"
    private let second = "\r\nGET /next HTTP/1.1\r\nHost: a.test\r\n\r\n"

    func testHeadScannerEveryPrefix() throws {
        let buffer = bytes(first + body + second)
        let headLength = first.utf8.count
        var incremental = HeadScanner()
        for length in 0...buffer.count {
            let prefix = Array(buffer.prefix(length))
            var fresh = HeadScanner()
            let expected: Int? = length >= headLength ? headLength : nil
            XCTAssertEqual(try prefix.withUnsafeBytes { try fresh.scan($0) }, expected, "fresh \(length)")
            XCTAssertEqual(try prefix.withUnsafeBytes { try incremental.scan($0) }, expected, "incremental \(length)")
        }
        // The second (pipelined) head, which starts with an empty line, parses after the body.
        let rest = Array(buffer[(headLength + body.utf8.count)...])
        var scanner = HeadScanner()
        for length in 0..<rest.count {
            XCTAssertNil(try Array(rest.prefix(length)).withUnsafeBytes { try scanner.scan($0) })
        }
        let secondLength = try XCTUnwrap(try rest.withUnsafeBytes { try scanner.scan($0) })
        XCTAssertEqual(secondLength, rest.count)
        let head = try rest.withUnsafeBytes { try RequestHeadParser.parse($0) }
        XCTAssertEqual(head.target, .origin("/next"))
    }

    func testChunkedEveryPrefixAndSplit() throws {
        let input = bytes(body + second)
        let bodyLength = body.utf8.count
        let expected = ChunkedResult(
            body: bytes("hello0123456789"),
            trailers: HTTPFields([HTTPField(name: "X-T", value: "1")]),
            consumed: bodyLength
        )
        for length in 0...input.count {
            let prefix = Array(input.prefix(length))
            let whole = try decodeChunked(prefix)
            XCTAssertEqual(whole, length >= bodyLength ? expected : nil, "prefix \(length)")
            // Same prefix, but arriving in two pieces split at every point.
            let split = try decodeChunked(input, firstArrival: length, step: input.count)
            XCTAssertEqual(split, expected, "split \(length)")
        }
        XCTAssertEqual(try decodeChunked(input, step: 1), expected)
        XCTAssertEqual(try decodeChunked(input, step: 3), expected)
    }

    func testMutatedInputsNeverCrash() throws {
        // Flip each byte of a valid message to a handful of interesting values; the scanner,
        // parser and decoder must either succeed or throw, never trap.
        let message = bytes(first + body)
        let interesting: [UInt8] = [0x00, 0x09, 0x0A, 0x0D, 0x20, 0x3A, 0x3B, 0x7F, 0xFF, 0x30]
        for index in message.indices {
            for value in interesting {
                var mutated = message
                mutated[index] = value
                mutated.withUnsafeBytes { buf in
                    var scanner = HeadScanner()
                    guard let length = try? scanner.scan(buf) else { return }
                    _ = try? RequestHeadParser.parse(UnsafeRawBufferPointer(rebasing: buf[0..<length]))
                    _ = try? ResponseHeadParser.parse(UnsafeRawBufferPointer(rebasing: buf[0..<length]), requestMethod: "GET")
                }
                _ = try? decodeChunked(Array(mutated[first.utf8.count...]), step: 7)
            }
        }
    }

    func testForbiddenByteAtEveryPositionOfLongValueAndTarget() throws {
        // Exercises the 8-bytes-at-a-time fast paths: a bad byte must be found at any offset.
        let value = String(repeating: "abcdefgh", count: 5)
        let target = "/" + String(repeating: "pqrstuvw", count: 5)
        for position in 0..<value.utf8.count {
            for bad: UInt8 in [0x00, 0x01, 0x0A, 0x0D, 0x1F, 0x7F] {
                var raw = bytes("GET / HTTP/1.1\r\nHost: a\r\nX-Long: " + value + "\r\n\r\n")
                raw[raw.count - 4 - value.utf8.count + position] = bad
                assertInvalid(try raw.withUnsafeBytes { try RequestHeadParser.parse($0) }, "value \(position) \(bad)")
            }
            for bad: UInt8 in [0x00, 0x09, 0x0A, 0x0D, 0x23, 0x7F, 0x80] {
                var raw = bytes("GET " + target + " HTTP/1.1\r\nHost: a\r\n\r\n")
                raw[4 + 1 + position] = bad
                assertInvalid(try raw.withUnsafeBytes { try RequestHeadParser.parse($0) }, "target \(position) \(bad)")
            }
            // A tab or UTF-8 text anywhere inside a value is fine.
            var tabbed = Array(value.utf8)
            tabbed[position] = 0x09
            let text = "GET / HTTP/1.1\r\nHost: a\r\nX-Long: " + String(decoding: tabbed, as: UTF8.self) + "\r\n\r\n"
            // (A tab at either end is OWS and is trimmed.)
            let expected = position == 0 || position == value.utf8.count - 1 ? value.utf8.count - 1 : value.utf8.count
            XCTAssertEqual(try parseRequest(text).fields.first("x-long")?.utf8.count, expected)
        }
        let utf8 = try parseRequest("GET / HTTP/1.1\r\nHost: a\r\nX-Long: " + value + "\u{e9}" + value + "\r\n\r\n")
        XCTAssertEqual(utf8.fields.first("x-long"), value + "\u{e9}" + value)
    }

    func testHeadScannerFindsControlBytesAtEveryOffset() throws {
        let line = String(repeating: "abcdefgh", count: 4)
        for position in 0..<line.utf8.count {
            var raw = bytes("GET /" + line + " HTTP/1.1\r\n\r\n")
            raw[5 + position] = 0x0A
            var scanner = HeadScanner()
            assertInvalid(try raw.withUnsafeBytes { try scanner.scan($0) }, "\(position)")
            raw[5 + position] = 0x0D
            raw[6 + position] = 0x0A
            var ok = HeadScanner()
            // "...\r\n<rest of line> HTTP/1.1\r\n\r\n": the first CRLF ends the start line early.
            XCTAssertEqual(try raw.withUnsafeBytes { try ok.scan($0) }, raw.count, "\(position)")
        }
    }
}
