import HTTP1
import XCTest

final class HeadScannerTests: XCTestCase {
    private func scan(_ scanner: inout HeadScanner, _ data: [UInt8]) throws -> Int? {
        try data.withUnsafeBytes { try scanner.scan($0) }
    }

    func testFindsEnd() throws {
        var scanner = HeadScanner()
        let head = bytes("GET / HTTP/1.1\r\nHost: a\r\n\r\n")
        XCTAssertEqual(try scan(&scanner, head + bytes("body")), head.count)
        // Asking again returns the same answer.
        XCTAssertEqual(try scan(&scanner, head + bytes("body")), head.count)
    }

    func testIncompleteThenComplete() throws {
        var scanner = HeadScanner()
        let head = bytes("GET / HTTP/1.1\r\nHost: a\r\n\r\n")
        XCTAssertNil(try scan(&scanner, Array(head.prefix(10))))
        XCTAssertNil(try scan(&scanner, Array(head.prefix(head.count - 1))))
        XCTAssertEqual(try scan(&scanner, head), head.count)
    }

    func testLeadingEmptyLinesIncluded() throws {
        var scanner = HeadScanner()
        let text = bytes("\r\n\r\nGET / HTTP/1.1\r\nHost: a\r\n\r\n")
        XCTAssertEqual(try scan(&scanner, text), text.count)
        scanner.reset()
        XCTAssertNil(try scan(&scanner, bytes("\r\n\r\n\r\n")))
    }

    func testTooManyLeadingEmptyLines() {
        var scanner = HeadScanner()
        assertInvalid(try scan(&scanner, bytes(String(repeating: "\r\n", count: 50) + "GET / HTTP/1.1\r\n\r\n")))
    }

    func testBareLFAndCR() {
        var scanner = HeadScanner()
        assertInvalid(try scan(&scanner, bytes("GET / HTTP/1.1\n")))
        scanner.reset()
        assertInvalid(try scan(&scanner, bytes("\n")))
        scanner.reset()
        assertInvalid(try scan(&scanner, bytes("GET / HTTP/1.1\rX")))
        scanner.reset()
        assertInvalid(try scan(&scanner, bytes("GET / HTTP/1.1\r\nA: b\r\n\r\r")))
    }

    func testCRAtEndWaitsForNextByte() throws {
        var scanner = HeadScanner()
        XCTAssertNil(try scan(&scanner, bytes("GET / HTTP/1.1\r")))
        assertInvalid(try scan(&scanner, bytes("GET / HTTP/1.1\rX")))
        scanner.reset()
        XCTAssertNil(try scan(&scanner, bytes("GET / HTTP/1.1\r")))
        XCTAssertNil(try scan(&scanner, bytes("GET / HTTP/1.1\r\n")))
    }

    func testLimit() throws {
        let head = bytes("GET / HTTP/1.1\r\nHost: a\r\n\r\n")
        var exact = HeadScanner(limit: head.count)
        XCTAssertEqual(try scan(&exact, head + bytes("more")), head.count)

        var tooSmall = HeadScanner(limit: head.count - 1)
        assertThrows(.headTooLarge, try scan(&tooSmall, head))

        var incremental = HeadScanner(limit: 16)
        XCTAssertNil(try scan(&incremental, Array(head.prefix(15))))
        assertThrows(.headTooLarge, try scan(&incremental, Array(head.prefix(16))))
    }

    func testResetForNextMessage() throws {
        var scanner = HeadScanner()
        XCTAssertEqual(try scan(&scanner, bytes("GET / HTTP/1.1\r\n\r\n")), 18)
        scanner.reset()
        XCTAssertEqual(try scan(&scanner, bytes("GET /ab HTTP/1.1\r\n\r\n")), 20)
    }
}
