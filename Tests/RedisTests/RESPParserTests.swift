import Redis
import XCTest

/// The RESP2 reply parser: every reply type, nulls, replies split at every byte, bulk strings
/// larger than a read, pipelined replies, and malformed input.
final class RESPParserTests: XCTestCase {
    private func parseAll(_ chunks: [[UInt8]]) throws -> [RESPValue] {
        var parser = RESPParser()
        var values: [RESPValue] = []
        for chunk in chunks {
            parser.append(chunk)
            while let value = try parser.next() { values.append(value) }
        }
        XCTAssertEqual(parser.pendingCount, 0)
        return values
    }

    private let sample = Array("+OK\r\n-ERR wrong type\r\n:42\r\n:-7\r\n$5\r\nhel\r\n\r\n$-1\r\n$0\r\n\r\n*-1\r\n*0\r\n*2\r\n$1\r\na\r\n*1\r\n:1\r\n".utf8)
    private let expected: [RESPValue] = [
        .simpleString("OK"), .error("ERR wrong type"), .integer(42), .integer(-7), .bulkString(Array("hel\r\n".utf8)),
        .bulkString(nil), .bulkString([]), .array(nil), .array([]), .array([.bulkString([97]), .array([.integer(1)])]),
    ]

    func testEveryReplyTypeInOneRead() throws {
        XCTAssertEqual(try parseAll([sample]), expected)
        XCTAssertTrue(RESPValue.bulkString(nil).isNull)
        XCTAssertTrue(RESPValue.array(nil).isNull)
        XCTAssertFalse(RESPValue.bulkString([]).isNull)
    }

    func testSplitAtEveryByte() throws {
        XCTAssertEqual(try parseAll(sample.map { [$0] }), expected)
        for cut in 1..<sample.count {
            XCTAssertEqual(try parseAll([Array(sample[..<cut]), Array(sample[cut...])]), expected, "cut at \(cut)")
        }
    }

    func testBulkLargerThanARead() throws {
        let payload = (0..<200_000).map { UInt8(truncatingIfNeeded: $0 &* 31) }
        let bytes = Array("$\(payload.count)\r\n".utf8) + payload + [13, 10] + Array("+OK\r\n".utf8)
        var parser = RESPParser()
        var values: [RESPValue] = []
        var offset = 0
        while offset < bytes.count {
            let end = min(offset + 16_384, bytes.count)
            parser.append(bytes[offset..<end])
            offset = end
            while let value = try parser.next() { values.append(value) }
            if offset < payload.count { XCTAssertTrue(values.isEmpty) }
        }
        XCTAssertEqual(values, [.bulkString(payload), .simpleString("OK")])
    }

    func testMalformed() {
        let cases = [
            "?what\r\n", ":12x\r\n", ":\r\n", "$-2\r\n", "$3\r\nabcX\r\n", "*-5\r\n", "+OK\rX", "+OK\n",
            "$\(RESPParser.maxBulkLength + 1)\r\n", "*\(RESPParser.maxArrayCount + 1)\r\n",
            String(repeating: "*1\r\n", count: RESPParser.maxDepth + 1) + ":1\r\n",
        ]
        for text in cases {
            var parser = RESPParser()
            parser.append(Array(text.utf8))
            XCTAssertThrowsError(try { () throws(RESPParser.ProtocolError) in
                while try parser.next() != nil {}
            }(), text.debugDescription)
        }
        var long = RESPParser()
        long.append(Array(("+" + String(repeating: "a", count: RESPParser.maxLineLength + 2)).utf8))
        XCTAssertThrowsError(try long.next())
    }

    func testIncompleteWaits() throws {
        for text in ["+OK", "+OK\r", "$5\r\nhel", "$5\r\nhello\r", "*2\r\n:1\r\n", "*2\r\n$1\r\n"] {
            var parser = RESPParser()
            parser.append(Array(text.utf8))
            XCTAssertNil(try parser.next(), text.debugDescription)
        }
    }

    func testCommandEncoding() {
        XCTAssertEqual(String(decoding: RESPCommand.encode("SET", "k", "v"), as: UTF8.self), "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\nv\r\n")
        XCTAssertEqual(RESPCommand.encode([[0, 13, 10]]), Array("*1\r\n$3\r\n".utf8) + [0, 13, 10, 13, 10])
    }
}
