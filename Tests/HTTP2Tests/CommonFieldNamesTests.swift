@testable import HTTP2
import XCTest

/// The common response field names handed to nghttp2 as lowercase constants: found in any case,
/// and nothing else taken for one of them.
final class CommonFieldNamesTests: XCTestCase {
    private let common = ["via", "date", "etag", "vary", "server", "expires", "location", "set-cookie", "content-type",
                          "proxy-status", "accept-ranges", "cache-control", "last-modified", "content-length",
                          "content-encoding"]

    private func lookUp(_ name: [UInt8]) -> String? {
        name.withUnsafeBytes { CommonFieldNames.lowercase($0).map { $0.description } }
    }

    func testEachCommonNameIsFoundInAnyCase() {
        for name in common {
            XCTAssertEqual(lookUp(Array(name.utf8)), name)
            XCTAssertEqual(lookUp(Array(name.uppercased().utf8)), name)
            // Title case, as HTTP/1.1 servers write them (Content-Type).
            let title = name.split(separator: "-", omittingEmptySubsequences: false)
                .map { $0.prefix(1).uppercased() + $0.dropFirst() }.joined(separator: "-")
            XCTAssertEqual(lookUp(Array(title.utf8)), name)
        }
    }

    func testANameDifferingInAnyOneByteIsNotTakenForACommonOne() {
        // Every byte of every name replaced by every other byte value but its other case: the
        // word compares must see each position (a first or last word that missed one would
        // match here), and only letters fold (CR | 0x20 is `-`, `@` | 0x20 is a backtick).
        for name in common {
            let bytes = Array(name.utf8)
            for index in bytes.indices {
                for replacement in UInt8(0)...UInt8(255) {
                    let original = bytes[index]
                    let isOtherCase = original >= 0x61 && original <= 0x7A && replacement == original - 0x20
                    guard replacement != original, !isOtherCase else { continue }
                    var changed = bytes
                    changed[index] = replacement
                    XCTAssertNil(lookUp(changed), "\(name) with byte \(index) as \(replacement)")
                }
            }
        }
    }

    func testOtherNamesAndOtherLengthsAreNotCommon() {
        for name in ["", "a", "te", "x-id", "host", "dates", "content-typ", "content-types", "x-content-type",
                     "transfer-encoding", "content-encodings", "grpc-status"] {
            XCTAssertNil(lookUp(Array(name.utf8)), name)
        }
    }
}
