@testable import HTTP1
import XCTest

/// The checks that look at 16 or 8 bytes at a time (``ASCII/nameRunEnd(_:from:to:)``,
/// ``ASCII/plainRunEnd(_:from:to:)`` and the checks of a codec's field lines built on them,
/// ``ASCII/isToken(_:_:)`` and ``ASCII/isPlainText(_:_:)``) against a byte-at-a-time reading
/// of the same rules: every length up to beyond two vectors and a word, with one odd byte at
/// each place (a lane or byte missed would show), inside a buffer with other bytes around.
final class ASCIITests: XCTestCase {
    func testATokenIsTcharsOnlyWhereverTheOddByteIs() {
        let odd: [UInt8] = [0x20, 0x3A, 0x22, 0x7F, 0x80, 0xFF, 0x00, 0x28]
        for length in 0...28 {
            let clean = (0..<length).map { UInt8(ascii: "a") &+ UInt8($0 % 26) }
            XCTAssertEqual(token(clean), length > 0, "length \(length)")
            // `!#$%&'*+.^_`|~` and digits are tchars too, beside letters and dashes.
            let symbols = (0..<length).map { Array("!#$%&'*+-.^_`|~09AZ".utf8)[$0 % 19] }
            XCTAssertEqual(token(symbols), length > 0, "symbols, length \(length)")
            withOneOddByte(clean, odd) { bytes, place, byte in
                XCTAssertFalse(token(bytes), "byte \(byte) at \(place) of \(length)")
            }
        }
    }

    func testPlainTextIsVisibleASCIIAndSpaceOnlyWhereverTheOddByteIs() {
        let odd: [UInt8] = [0x00, 0x09, 0x0A, 0x0D, 0x1F, 0x7F, 0x80, 0xC3, 0xFF]
        for length in 0...28 {
            let clean = (0..<length).map { UInt8(0x20 + $0 * 7 % 95) }
            XCTAssertTrue(plain(clean), "length \(length)")
            withOneOddByte(clean, odd) { bytes, place, byte in
                XCTAssertFalse(plain(bytes), "byte \(byte) at \(place) of \(length)")
            }
        }
    }

    /// A run ends at its first odd byte, or where it is told to end, wherever that falls in
    /// the 16- and 8-byte steps; bytes past the end never count.
    func testARunEndsAtItsFirstOddByteOrItsEnd() {
        let nameOdd: [UInt8] = [0x3A, 0x5F, 0x2E, 0x40, 0x5B, 0x60, 0x7B, 0x2F, 0x20, 0x00, 0x80, 0xFF]
        let plainOdd: [UInt8] = [0x0D, 0x0A, 0x00, 0x09, 0x1F, 0x7F, 0x80, 0xFF]
        for length in 0...41 {
            let name = (0..<length).map { Array("azAZ09-mM".utf8)[$0 % 9] }
            let plain = (0..<length).map { UInt8(0x20 + $0 * 11 % 95) }
            // To its end: the whole run; told to end sooner: there.
            XCTAssertEqual(run(name, ASCII.nameRunEnd), length)
            XCTAssertEqual(run(plain, ASCII.plainRunEnd), length)
            XCTAssertEqual(run(name, ASCII.nameRunEnd, end: length / 2), length / 2)
            XCTAssertEqual(run(plain, ASCII.plainRunEnd, end: length / 3), length / 3)
            withOneOddByte(name, nameOdd) { bytes, place, byte in
                XCTAssertEqual(run(bytes, ASCII.nameRunEnd), place, "byte \(byte) at \(place) of \(length)")
            }
            withOneOddByte(plain, plainOdd) { bytes, place, byte in
                XCTAssertEqual(run(bytes, ASCII.plainRunEnd), place, "byte \(byte) at \(place) of \(length)")
            }
        }
    }

    /// `body` called with `clean` changed at one place to one of `odd`, for every place and
    /// every odd byte.
    private func withOneOddByte(_ clean: [UInt8], _ odd: [UInt8], _ body: ([UInt8], Int, UInt8) -> Void) {
        for place in clean.indices {
            for byte in odd {
                var bytes = clean
                bytes[place] = byte
                body(bytes, place, byte)
            }
        }
    }

    /// Where the run over `bytes` ends (relative to them), set in a buffer between odd bytes
    /// and with 20 odd bytes after, looked at up to `end` (relative; default: all of `bytes`).
    private func run(_ bytes: [UInt8], _ runEnd: (UnsafeRawBufferPointer, Int, Int) -> Int, end: Int? = nil) -> Int {
        let framed = [0x00, 0x3A, 0x0D] + bytes + [UInt8](repeating: 0x00, count: 20)
        return framed.withUnsafeBytes { runEnd($0, 3, 3 + (end ?? bytes.count)) } - 3
    }

    /// `bytes` checked where they sit between other bytes (odd ones, which must not count).
    private func token(_ bytes: [UInt8]) -> Bool {
        let framed = [0x20, 0x00, 0x3A] + bytes + [0x3A, 0x00, 0x20, 0x7F]
        return framed.withUnsafeBytes { ASCII.isToken($0, 3..<3 + bytes.count) }
    }

    private func plain(_ bytes: [UInt8]) -> Bool {
        let framed = [0x00, 0x0A, 0x7F] + bytes + [0x00, 0x0D, 0x0A, 0xFF]
        return framed.withUnsafeBytes { ASCII.isPlainText($0, 3..<3 + bytes.count) }
    }
}
