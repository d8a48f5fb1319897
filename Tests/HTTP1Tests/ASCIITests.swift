@testable import HTTP1
import XCTest

/// The word-at-a-time checks of a codec's field lines (``ASCII/isToken(_:_:)``,
/// ``ASCII/isPlainText(_:_:)``) against a byte-at-a-time reading of the same rules: every
/// length up to three words and a half, with one odd byte at each place (the last word
/// overlaps bytes already looked at, so a byte missed or looked at twice would show), inside
/// a buffer with other bytes around the range.
final class ASCIITests: XCTestCase {
    func testATokenIsTcharsOnlyWhereverTheOddByteIs() {
        let odd: [UInt8] = [0x20, 0x3A, 0x22, 0x7F, 0x80, 0xFF, 0x00, 0x28]
        for length in 0...28 {
            let clean = (0..<length).map { UInt8(ascii: "a") &+ UInt8($0 % 26) }
            XCTAssertEqual(token(clean), length > 0, "length \(length)")
            // `!#$%&'*+.^_`|~` and digits are tchars too, beside letters and dashes.
            let symbols = (0..<length).map { Array("!#$%&'*+-.^_`|~09AZ".utf8)[$0 % 19] }
            XCTAssertEqual(token(symbols), length > 0, "symbols, length \(length)")
            for place in 0..<length {
                for byte in odd {
                    var bytes = clean
                    bytes[place] = byte
                    XCTAssertFalse(token(bytes), "byte \(byte) at \(place) of \(length)")
                }
            }
        }
    }

    func testPlainTextIsVisibleASCIIAndSpaceOnlyWhereverTheOddByteIs() {
        let odd: [UInt8] = [0x00, 0x09, 0x0A, 0x0D, 0x1F, 0x7F, 0x80, 0xC3, 0xFF]
        for length in 0...28 {
            let clean = (0..<length).map { UInt8(0x20 + $0 * 7 % 95) }
            XCTAssertTrue(plain(clean), "length \(length)")
            for place in 0..<length {
                for byte in odd {
                    var bytes = clean
                    bytes[place] = byte
                    XCTAssertFalse(plain(bytes), "byte \(byte) at \(place) of \(length)")
                }
            }
        }
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
