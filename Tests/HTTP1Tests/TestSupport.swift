import HTTP1
import XCTest

enum TestFailure: Error { case incomplete }

/// Scans `text` with a fresh HeadScanner and parses the measured head as a request.
func parseRequest(_ text: String, maxFields: Int = 100, limit: Int = 65536) throws -> RequestHead {
    let bytes = Array(text.utf8)
    return try bytes.withUnsafeBytes { buf in
        var scanner = HeadScanner(limit: limit)
        guard let length = try scanner.scan(buf) else { throw TestFailure.incomplete }
        return try RequestHeadParser.parse(UnsafeRawBufferPointer(rebasing: buf[0..<length]), maxFields: maxFields)
    }
}

/// Parses `text` directly (no HeadScanner), to check the parser's own validation.
func parseRequestDirect(_ text: String) throws -> RequestHead {
    let bytes = Array(text.utf8)
    return try bytes.withUnsafeBytes { try RequestHeadParser.parse($0) }
}

func parseResponse(_ text: String, method: String = "GET") throws -> ResponseHead {
    let bytes = Array(text.utf8)
    return try bytes.withUnsafeBytes { buf in
        var scanner = HeadScanner()
        guard let length = try scanner.scan(buf) else { throw TestFailure.incomplete }
        return try ResponseHeadParser.parse(UnsafeRawBufferPointer(rebasing: buf[0..<length]), requestMethod: method)
    }
}

/// A GET request with the given extra header lines (each without CRLF).
func request(_ lines: [String], requestLine: String = "GET / HTTP/1.1", host: String? = "example.test") -> String {
    var text = requestLine + "\r\n"
    if let host { text += "Host: \(host)\r\n" }
    for line in lines { text += line + "\r\n" }
    return text + "\r\n"
}

func assertInvalid(
    _ expression: @autoclosure () throws -> some Any, _ message: String = "",
    file: StaticString = #filePath, line: UInt = #line
) {
    XCTAssertThrowsError(try expression(), message, file: file, line: line) { error in
        guard let parseError = error as? HTTPParseError, case .invalid = parseError else {
            XCTFail("expected .invalid, got \(error) \(message)", file: file, line: line)
            return
        }
        XCTAssertEqual(parseError.status, 400, file: file, line: line)
    }
}

func assertThrows(
    _ expected: HTTPParseError, _ expression: @autoclosure () throws -> some Any,
    file: StaticString = #filePath, line: UInt = #line
) {
    XCTAssertThrowsError(try expression(), file: file, line: line) { error in
        XCTAssertEqual(error as? HTTPParseError, expected, file: file, line: line)
    }
}

/// Result of driving a ChunkedDecoder over a simulated evbuffer.
struct ChunkedResult: Equatable {
    var body: [UInt8]
    var trailers: HTTPFields
    var consumed: Int
}

/// Feeds `input` to a decoder the way the proxy does: bytes "arrive" in pieces (first
/// `firstArrival` bytes, then `step` bytes at a time), the decoder sees the unconsumed
/// arrived prefix, and data is moved out as told. Returns nil if the input ends first.
func decodeChunked(
    _ input: [UInt8], firstArrival: Int? = nil, step: Int = .max,
    decoder: ChunkedDecoder = ChunkedDecoder()
) throws -> ChunkedResult? {
    var decoder = decoder
    var available = min(firstArrival ?? step, input.count)
    var pos = 0
    var body: [UInt8] = []
    func arrive() -> Bool {
        guard available < input.count else { return false }
        available = available + min(step, input.count - available)
        return true
    }
    while true {
        let next = try input.withUnsafeBytes { buf in
            try decoder.next(UnsafeRawBufferPointer(rebasing: buf[pos..<available]))
        }
        switch next {
        case .needMore:
            if !arrive() { return nil }
        case .chunkHeader(_, let consumed):
            pos += consumed
        case .data(let remaining):
            let n = Int(min(remaining, UInt64(available - pos)))
            if n == 0 {
                if !arrive() { return nil }
            } else {
                body += input[pos..<(pos + n)]
                pos += n
                decoder.consumeData(n)
            }
        case .chunkEnd(let consumed):
            XCTAssertEqual(consumed, 2)
            pos += consumed
        case .end(let consumed, let trailers):
            pos += consumed
            XCTAssertTrue(decoder.isComplete)
            return ChunkedResult(body: body, trailers: trailers, consumed: pos)
        }
    }
}

func bytes(_ text: String) -> [UInt8] { Array(text.utf8) }
