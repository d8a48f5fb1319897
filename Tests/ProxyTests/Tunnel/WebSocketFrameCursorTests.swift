import XCTest
@testable import Proxy

/// Frame boundaries of RFC 6455 §5.2: every length form, masked or not, a header split at every
/// byte, and lengths no peer may send.
final class WebSocketFrameCursorTests: XCTestCase {
    func testEveryLengthFormMaskedOrNot() {
        XCTAssertEqual(WebSocketFrameCursor.header([0x81, 0x05]), .frame(length: 7))
        XCTAssertEqual(WebSocketFrameCursor.header([0x81, 0x85]), .frame(length: 11), "a masking key adds 4")
        XCTAssertEqual(WebSocketFrameCursor.header([0x82, 126, 0x01, 0x00]), .frame(length: 4 + 256))
        XCTAssertEqual(WebSocketFrameCursor.header([0x82, 0xFE, 0x01, 0x00]), .frame(length: 8 + 256))
        XCTAssertEqual(WebSocketFrameCursor.header([0x82, 127, 0, 0, 0, 0, 0x01, 0, 0, 0]), .frame(length: 10 + (1 << 24)))
        XCTAssertEqual(WebSocketFrameCursor.header([0x88, 0x00]), .frame(length: 2), "an empty close")
    }

    func testAHeaderSplitAtEveryByteWaitsForTheRest() {
        let header: [UInt8] = [0x82, 0xFF, 0, 0, 0, 0, 0, 0, 0x10, 0, 1, 2, 3, 4]
        for cut in 0..<9 {
            XCTAssertEqual(WebSocketFrameCursor.header(Array(header.prefix(cut))), .needMore, "cut at \(cut)")
        }
        XCTAssertEqual(WebSocketFrameCursor.header(header), .frame(length: 14 + 4096))
    }

    func testALengthNoPeerMaySendIsMalformed() {
        XCTAssertEqual(WebSocketFrameCursor.header([0x82, 127, 0x80, 0, 0, 0, 0, 0, 0, 1]), .malformed)
        XCTAssertEqual(WebSocketFrameCursor.header([0x82, 127, 0x7F, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF]), .malformed)
    }

    func testTheCursorCountsDownToTheNextBoundary() {
        var cursor = WebSocketFrameCursor()
        XCTAssertTrue(cursor.atBoundary)
        XCTAssertEqual(cursor.begin([0x81, 0x03, 0x61]), .frame(length: 5))
        XCTAssertEqual(cursor.remaining, 5)
        cursor.advance(3)
        XCTAssertFalse(cursor.atBoundary)
        cursor.advance(9)
        XCTAssertTrue(cursor.atBoundary, "never below zero")
        XCTAssertEqual(cursor.begin([0x81]), .needMore)
        XCTAssertTrue(cursor.atBoundary, "an incomplete header starts nothing")
    }

    func testTheCloseFrameIsAnUnmaskedServerFrame() {
        XCTAssertEqual(WebSocketFrameCursor.closeFrame(code: 1001), [0x88, 0x02, 0x03, 0xE9])
    }
}
