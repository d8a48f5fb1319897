import XCTest
@testable import Proxy

final class HeadWriterTests: XCTestCase {
    func testPiecesAndDecimalsLandInOrder() {
        let bytes = HeadWriter.bytes(maxCount: 64) { out in
            out.write("GET")
            out.write(byte: 0x20)
            out.write([0x2f, 0x61])
            Array(" n=".utf8).withUnsafeBytes { out.write($0) }
            for value: UInt64 in [0, 9, 10, 1234567890] {
                out.writeDecimal(value)
                out.write(byte: 0x2c)
            }
        }
        XCTAssertEqual(String(decoding: bytes, as: UTF8.self), "GET /a n=0,9,10,1234567890,")
        let largest = HeadWriter.bytes(maxCount: HeadWriter.maxDecimalCount) { $0.writeDecimal(UInt64.max) }
        XCTAssertEqual(String(decoding: largest, as: UTF8.self), String(UInt64.max))
        XCTAssertEqual(HeadWriter.bytes(maxCount: 8) { _ in }, [], "nothing written: an empty head")
    }
}
