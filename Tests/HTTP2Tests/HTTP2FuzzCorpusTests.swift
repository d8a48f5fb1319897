import Foundation
import HTTP1
import HTTP2
import HTTP2Fuzzing
import XCTest

/// The HTTP/2 fuzzer's properties (``HTTP2RequestCheck``) over its seed corpus and its saved
/// regressions, on every `make test`; and proof the check catches what it is there to catch.
final class HTTP2FuzzCorpusTests: XCTestCase {
    static let fuzzDirectory = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("Fuzz")

    func testEveryCorpusAndRegressionInputHoldsEveryPropertyAtEveryReadSize() throws {
        var inputs = 0
        for folder in ["Corpus/http2", "Regressions/http2"] {
            let directory = Self.fuzzDirectory.appendingPathComponent(folder)
            let names = (try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []
            for name in names.sorted() where !name.hasPrefix(".") {
                let bytes = try [UInt8](Data(contentsOf: directory.appendingPathComponent(name)))
                for selector in [0, 1, 6, 63] as [UInt8] {
                    XCTAssertEqual(HTTP2RequestCheck.run([selector] + bytes.dropFirst()), [], "\(folder)/\(name), reads of \(selector % 64 + 1)")
                }
                inputs += 1
            }
        }
        XCTAssertGreaterThanOrEqual(inputs, 10, "the seeds are in Fuzz/Corpus/http2")
    }

    /// The differential fuzzer's seeds and regressions: the validator and its oracle agree.
    func testEveryHeadCorpusAndRegressionInputFindsTheValidatorAndItsOracleAgreeing() throws {
        var inputs = 0
        for folder in ["Corpus/http2-head", "Regressions/http2-head"] {
            let directory = Self.fuzzDirectory.appendingPathComponent(folder)
            let names = (try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []
            for name in names.sorted() where !name.hasPrefix(".") {
                let bytes = try [UInt8](Data(contentsOf: directory.appendingPathComponent(name)))
                XCTAssertEqual(HTTP2HeadCheck.run(bytes), [], "\(folder)/\(name)")
                inputs += 1
            }
        }
        XCTAssertGreaterThanOrEqual(inputs, 10, "the seeds are in Fuzz/Corpus/http2-head")
    }

    /// The differential check catches a validator that disagrees with its oracle: a head the
    /// oracle reads as another request (a CR LF in a value, which nghttp2 never delivers and
    /// the fuzzer's input never holds) is refused by the validator, and reported.
    func testTheDifferentialCheckReportsADisagreement() {
        let head = HTTP2Head(method: "GET", scheme: "http", authority: "a.test", path: "/",
                             fields: HTTPFields([HTTPField(name: "x-a", value: "b\r\nx-injected: 1")]))
        XCTAssertEqual(HTTP2RequestCheck.differences(head, endStream: true), ["the validator refuses a head the oracle takes"])
    }

    func testTheCheckFlagsATranslationThatWouldCarryAnInjectedField() {
        // A head the codec would never deliver (a CR LF in a value): the check reports both the
        // delivery and the field that appears in translation.
        let head = HTTP2Head(method: "GET", scheme: "http", authority: "a.test", path: "/",
                             fields: HTTPFields([HTTPField(name: "x-a", value: "b\r\nx-injected: 1")]))
        let problems = HTTP2RequestCheck.check(head, endStream: true)
        XCTAssertTrue(problems.contains("a value with CR, LF or NUL was delivered"), "\(problems)")
        XCTAssertTrue(problems.contains { $0.hasPrefix("the translated fields differ") }, "\(problems)")
    }

    func testTheCheckFlagsEveryValueTheCodecRefusesAndNoValueItTakes() {
        // What nghttp2 resets a stream for (HTTP2CodecTests) must never come out of the codec: a
        // fuzzed input that delivered one would be reported.
        func problems(_ value: String) -> [String] {
            HTTP2RequestCheck.check(HTTP2Head(method: "GET", scheme: "http", authority: "a.test", path: "/",
                                              fields: HTTPFields([HTTPField(name: "x-a", value: value)])), endStream: true)
        }
        XCTAssertTrue(problems("b\u{01}c").contains("a value with a control character or DEL was delivered"), "\(problems("b\u{01}c"))")
        XCTAssertTrue(problems("b\u{7F}c").contains("a value with a control character or DEL was delivered"), "\(problems("b\u{7F}c"))")
        XCTAssertTrue(problems(" b").contains("a value with whitespace around it was delivered"), "\(problems(" b"))")
        XCTAssertTrue(problems("b\t").contains("a value with whitespace around it was delivered"), "\(problems("b\t"))")
        for taken in ["a\tb", "a b", "", "\u{E9}t\u{E9}"] {
            XCTAssertEqual(problems(taken), [], taken)
        }
    }
}
