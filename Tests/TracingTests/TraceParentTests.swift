import XCTest
@testable import Tracing

final class TraceParentTests: XCTestCase {
    let valid = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"

    func testParsesTheSpecExampleAndFormatsItBack() throws {
        let context = try XCTUnwrap(TraceParent.parse(valid))
        XCTAssertEqual(context.traceID.hex, "4bf92f3577b34da6a3ce929d0e0e4736")
        XCTAssertEqual(context.spanID.hex, "00f067aa0ba902b7")
        XCTAssertTrue(context.sampled)
        XCTAssertTrue(context.isRemote)
        XCTAssertEqual(TraceParent.string(context), valid)
    }

    func testUnsampledFlagAndOtherFlagBitsAreRead() throws {
        XCTAssertEqual(TraceParent.parse("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00")?.sampled, false)
        XCTAssertEqual(TraceParent.parse("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-03")?.sampled, true)
        XCTAssertEqual(TraceParent.parse("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-02")?.sampled, false)
    }

    func testSurroundingWhitespaceIsNotPartOfTheValue() {
        XCTAssertNotNil(TraceParent.parse("  \(valid)\t"))
    }

    func testInvalidValuesAreRefused() {
        let invalid = [
            "", "00", String(valid.dropLast()), valid + "0", valid + "-",
            "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",      // version ff
            "00-00000000000000000000000000000000-00f067aa0ba902b7-01",      // zero trace id
            "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",      // zero parent id
            "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",      // uppercase
            "00_4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",      // separator
            "00-4bf92f3577b34da6a3ce929d0e0e473g-00f067aa0ba902b7-01",      // not hex
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-0x",
            "0g-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
        ]
        for value in invalid { XCTAssertNil(TraceParent.parse(value), value) }
    }

    func testAHigherVersionIsReadByItsVersion00Prefix() {
        XCTAssertNotNil(TraceParent.parse("01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"))
        XCTAssertNotNil(TraceParent.parse("01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-what-comes-next"))
        XCTAssertNil(TraceParent.parse("01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01x"))
    }

    func testGeneratedIdsAreValidAndDistinct() {
        var ids = IDGenerator()
        var seen = Set<SpanID>()
        for _ in 0..<10_000 {
            let id = ids.spanID()
            XCTAssertTrue(id.isValid)
            seen.insert(id)
        }
        XCTAssertEqual(seen.count, 10_000)
        let trace = ids.traceID()
        XCTAssertEqual(trace.hex.count, 32)
        XCTAssertEqual(TraceParent.parse(TraceParent.string(SpanContext(traceID: trace, spanID: ids.spanID(), sampled: false)))?.traceID, trace)
    }

    /// The word-at-a-time hex formatting against the standard library's, over random ids and the edges.
    func testFormattingMatchesTheStandardLibrarysHex() {
        var ids = IDGenerator(seed: (21, 22, 23, 24))
        func hex(_ value: UInt64) -> String { String(repeating: "0", count: 16 - String(value, radix: 16).count) + String(value, radix: 16) }
        var cases = [(UInt64(1), UInt64(0), UInt64(1)), (.max, .max, .max), (0x0123_4567_89AB_CDEF, 0xFEDC_BA98_7654_3210, 0xA0A0_0A0A_F0F0_0F0F)]
        for _ in 0..<1_000 { cases.append((ids.next(), ids.next(), ids.next() | 1)) }
        for (high, low, span) in cases {
            let context = SpanContext(traceID: TraceID(high: high, low: low), spanID: SpanID(span), sampled: span & 2 == 0)
            XCTAssertEqual(TraceParent.string(context), "00-\(hex(high))\(hex(low))-\(hex(span))-\(span & 2 == 0 ? "01" : "00")")
        }
    }
}
