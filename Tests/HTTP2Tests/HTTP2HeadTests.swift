import HTTP1
@testable import HTTP2
import XCTest

/// `HTTP2Head` built field by field and written in one pass into storage sized once.
final class HTTP2HeadTests: XCTestCase {
    func testAHeadWrittenInOnePassEqualsOneAppendedFieldByField() {
        let fields: [(String, String)] = [("content-type", "application/grpc"), ("x-empty", ""), ("authorization", "Bearer abc"),
                                          ("te", "trailers")]
        let appended = HTTP2Head(method: "POST", scheme: "https", authority: "api.test", path: "/svc/Call",
                                 fields: HTTPFields(fields.map { HTTPField(name: $0.0, value: $0.1) }))
        // Room for more than is written: what is kept is what was written.
        let written = HTTP2Head(method: "POST", scheme: "https", authority: "api.test", path: "/svc/Call",
                                fields: fields.count + 3, bytes: 200) { out in
            for (name, value) in fields {
                Array(name.utf8).withUnsafeBytes { n in Array(value.utf8).withUnsafeBytes { out.add(name: n, value: $0) } }
            }
        }
        XCTAssertEqual(written, appended)
        XCTAssertEqual(written.fieldCount, 4)
        XCTAssertEqual(written.fieldByteCount, fields.reduce(0) { $0 + $1.0.utf8.count + $1.1.utf8.count })
        XCTAssertEqual(written.firstField("authorization"), "Bearer abc")
        let empty = HTTP2Head(method: "GET", scheme: "http", authority: "a", path: "/", fields: 0, bytes: 0) { _ in }
        XCTAssertEqual(empty, HTTP2Head(method: "GET", scheme: "http", authority: "a", path: "/"))
    }

    func testAHeadWrittenIntoASparesStorageHoldsOnlyItsOwnFieldsAndLeavesACopyOfTheSpareAlone() {
        func written(_ fields: [(String, String)], reusing spare: consuming HTTP2Head = HTTP2Head()) -> HTTP2Head {
            HTTP2Head(method: "POST", scheme: "http", authority: "api.test", path: "/svc/Call", fields: fields.count, bytes: 100,
                      reusing: spare) { out in
                for (name, value) in fields {
                    Array(name.utf8).withUnsafeBytes { n in Array(value.utf8).withUnsafeBytes { out.add(name: n, value: $0) } }
                }
            }
        }
        let first = [("content-type", "application/grpc"), ("authorization", "Bearer one"), ("te", "trailers")]
        let second = [("x-next", "2")]
        var spare = written(first)
        spare.makeSpare()
        XCTAssertEqual(spare, HTTP2Head(), "a spare holds nothing but storage")
        // Its only holder: the storage is taken, and nothing of the first head shows.
        XCTAssertEqual(written(second, reusing: spare), written(second))
        // Shared with a copy: the copy keeps what it had.
        let kept = written(first)
        let reused = written(second, reusing: kept)
        XCTAssertEqual(reused.firstField("x-next"), "2")
        XCTAssertNil(reused.firstField("content-type"))
        XCTAssertEqual(kept.firstField("authorization"), "Bearer one")
        XCTAssertEqual(kept.fieldCount, 3)
        // Too small for the fields: they are written into new storage.
        var small = written([("a", "b")])
        small.makeSpare()
        let large = HTTP2Head(method: "GET", scheme: "http", authority: "a", path: "/", fields: 40, bytes: 4000, reusing: small) { out in
            for index in 0..<40 {
                Array("x-\(index)".utf8).withUnsafeBytes { n in Array(repeating: UInt8(ascii: "v"), count: 90).withUnsafeBytes { out.add(name: n, value: $0) } }
            }
        }
        XCTAssertEqual(large.fieldCount, 40)
        XCTAssertEqual(large.firstField("x-39"), String(repeating: "v", count: 90))
    }

    /// A lease's spent head keeps its pseudo-header fields for the next head written into it:
    /// that head has its own, whether the same or not, and only its own regular fields.
    func testASpareKeepingItsPseudoHeadersGivesTheNextHeadOnlyWhatThatHeadSays() {
        func written(_ method: String, _ authority: String, _ path: String, _ fields: [(String, String)],
                     reusing spare: consuming HTTP2Head) -> HTTP2Head {
            HTTP2Head(method: method, scheme: "http", authority: authority, path: path, fields: fields.count, bytes: 100,
                      reusing: spare) { out in
                for (name, value) in fields {
                    Array(name.utf8).withUnsafeBytes { n in Array(value.utf8).withUnsafeBytes { out.add(name: n, value: $0) } }
                }
            }
        }
        let path = "/helloworld.Greeter/SayHelloAgainAndAgain"
        var spare = written("POST", "api.test", path, [("te", "trailers"), ("grpc-timeout", "99m")], reusing: HTTP2Head())
        spare.makeSpareKeepingPseudoHeaders()
        XCTAssertEqual(spare.fieldCount, 0, "no regular field is kept")
        XCTAssertEqual(spare.path, path, "the pseudo-header fields are")
        // The same again, then others: each head is exactly what was written.
        let same = written("POST", "api.test", path, [("x-n", "1")], reusing: spare)
        XCTAssertEqual(same, HTTP2Head(method: "POST", scheme: "http", authority: "api.test", path: path,
                                      fields: HTTPFields([HTTPField(name: "x-n", value: "1")])))
        var next = same
        next.makeSpareKeepingPseudoHeaders()
        let other = written("GET", "other.test", "/" + String(repeating: "p", count: 40), [], reusing: next)
        XCTAssertEqual(other, HTTP2Head(method: "GET", scheme: "http", authority: "other.test",
                                       path: "/" + String(repeating: "p", count: 40)))
        XCTAssertEqual(same.path, path, "a copy keeps what it had")
        // Too large to keep: nothing is.
        var large = written("POST", "api.test", "/" + String(repeating: "l", count: 3000), [], reusing: HTTP2Head())
        large.makeSpareKeepingPseudoHeaders()
        XCTAssertEqual(large, HTTP2Head())
    }

    func testSameStringIsSameBitsOnly() {
        let long = String(repeating: "a", count: 40)
        let copy = long
        XCTAssertTrue(HTTP2Head.sameString(long, copy))
        XCTAssertTrue(HTTP2Head.sameString("POST", "POST"))
        XCTAssertTrue(HTTP2Head.sameString(nil, nil))
        XCTAssertFalse(HTTP2Head.sameString(nil, ""))
        XCTAssertFalse(HTTP2Head.sameString("GET", "PUT"))
        XCTAssertFalse(HTTP2Head.sameString(long, String(repeating: "a", count: 39) + "b"))
    }
}
