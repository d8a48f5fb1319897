import HTTP1
@testable import HTTP2
import XCTest

/// A connection's trailer sections that repeat (a gRPC server's status after every call) take
/// the fields made for the last one; any difference, in a byte or where a name ends, makes
/// them anew.
final class RecentTrailersTests: XCTestCase {
    private func section(_ fields: [(String, String)]) -> HTTP2Head {
        var head = HTTP2Head()
        var recent = HTTP2Head.RecentValues()
        for (name, value) in fields {
            Array(name.utf8).withUnsafeBufferPointer { n in
                Array(value.utf8).withUnsafeBufferPointer { head.add(name: n, value: $0, recent: &recent) }
            }
        }
        return head
    }

    /// Where the fields' storage is: the same address is the same fields, not made again.
    private func storage(_ fields: HTTPFields) -> UnsafeRawPointer? {
        fields.fields.withUnsafeBufferPointer { UnsafeRawPointer($0.baseAddress) }
    }

    func testTheSameSectionAgainTakesTheFieldsMadeForTheLast() {
        var recent = RecentTrailers()
        let first = recent.fields(of: section([("grpc-status", "0"), ("grpc-message", "")]))
        XCTAssertEqual(first.fields.map { [$0.name, $0.value] }, [["grpc-status", "0"], ["grpc-message", ""]])
        let again = recent.fields(of: section([("grpc-status", "0"), ("grpc-message", "")]))
        XCTAssertEqual(again, first)
        XCTAssertEqual(storage(again), storage(first), "not made again")
    }

    func testASectionThatDiffersInAByteOrInWhereANameEndsIsMadeAnew() {
        var recent = RecentTrailers()
        let first = recent.fields(of: section([("grpc-status", "0")]))
        let status = recent.fields(of: section([("grpc-status", "5")]))
        XCTAssertEqual(status.fields.map(\.value), ["5"])
        XCTAssertNotEqual(storage(status), storage(first))
        // The same bytes split elsewhere: "ab" + "c" against "a" + "bc".
        let split = recent.fields(of: section([("ab", "c")]))
        let other = recent.fields(of: section([("a", "bc")]))
        XCTAssertEqual(split.fields.map { [$0.name, $0.value] }, [["ab", "c"]])
        XCTAssertEqual(other.fields.map { [$0.name, $0.value] }, [["a", "bc"]])
        XCTAssertEqual(recent.fields(of: section([])), HTTPFields(), "an empty section")
    }

    func testALargeSectionIsNeverKept() {
        var recent = RecentTrailers()
        let large = [("x-large", String(repeating: "a", count: RecentTrailers.limit))]
        let first = recent.fields(of: section(large))
        let again = recent.fields(of: section(large))
        XCTAssertEqual(again, first, "the same fields")
        XCTAssertNotEqual(storage(again), storage(first), "made anew each time: a large one is not kept")
    }
}
