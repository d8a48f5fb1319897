import HTTP1
import XCTest

/// Writing a head into storage sized for it beforehand.
final class PresizedSectionWriterTests: XCTestCase {
    /// Lines written into storage sized for them read back as the HTTP/1.1 parser reads them:
    /// names and values where the offsets say, a value's whitespace around it left out.
    func testLinesAreWrittenInPlaceWithTheirOffsets() {
        var bytes: [UInt8] = []
        let size = "HTTP/1.1 200 OK\r\n".utf8.count + "content-type: text/plain\r\n".utf8.count + "x-pad:  a b \r\n".utf8.count
        PresizedSectionWriter.resize(&bytes, to: size)
        var lines: [FieldLine] = []
        let written = bytes.withUnsafeMutableBytes { buffer -> Int in
            var writer = PresizedSectionWriter(buffer)
            writer.put("HTTP/1.1 " as StaticString)
            writer.put(byte: UInt8(ascii: "2"))
            writer.put("00 OK\r\n" as StaticString)
            Array("text/plain".utf8).withUnsafeBytes { writer.line(name: "content-type", value: $0, into: &lines) }
            Array("x-pad".utf8).withUnsafeBytes { name in
                Array(" a b ".utf8).withUnsafeBytes { lines.append(writer.line(name: name, value: $0)) }
            }
            return writer.position
        }
        XCTAssertEqual(written, size)
        XCTAssertEqual(String(decoding: bytes, as: UTF8.self), "HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\nx-pad:  a b \r\n")
        let text = { (range: Range<Int>) in String(decoding: bytes[range], as: UTF8.self) }
        XCTAssertEqual(lines.map { text($0.name) }, ["content-type", "x-pad"])
        XCTAssertEqual(lines.map { text($0.value) }, ["text/plain", "a b"])
    }

    /// Storage is resized to exactly the size asked for, keeping its room: grown past the
    /// zeros it is grown by at a time (1 KiB), shrunk, and grown with room to spare after it.
    func testResizeGivesExactlyTheSizeWithRoomToSpare() {
        var bytes: [UInt8] = Array(repeating: 7, count: 10)
        PresizedSectionWriter.resize(&bytes, to: 3000, spare: 100)
        XCTAssertEqual(bytes.count, 3000)
        XCTAssertGreaterThanOrEqual(bytes.capacity, 3100)
        XCTAssertEqual(Array(bytes[..<10]), Array(repeating: 7, count: 10), "what it held stays (to be overwritten)")
        XCTAssertTrue(bytes[10...].allSatisfy { $0 == 0 })
        let capacity = bytes.capacity
        PresizedSectionWriter.resize(&bytes, to: 40)
        XCTAssertEqual(bytes.count, 40)
        XCTAssertEqual(bytes.capacity, capacity, "shrunk in place")
        PresizedSectionWriter.resize(&bytes, to: 0)
        XCTAssertTrue(bytes.isEmpty)
    }
}
