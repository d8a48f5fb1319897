import Foundation
import HTTP1Fuzzing
import XCTest

/// The fuzzers' corpora, checked on every test run: the committed seeds are exactly those
/// ``FuzzSeeds`` generates, and every seed and every saved crash (Fuzz/Regressions) holds the
/// properties the fuzzers check. A crash `make fuzz` finds becomes a regression test by being
/// copied into Fuzz/Regressions/<target>/.
final class FuzzCorpusTests: XCTestCase {
    static let fuzzDirectory = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("Fuzz")

    static let checks: [String: @Sendable (FuzzInput) -> [String]] = [
        "request-head": RequestHeadCheck.run,
        "response-head": ResponseHeadCheck.run,
        "chunked": ChunkedCheck.run,
    ]

    func testCommittedSeedsAreTheGeneratedOnes() throws {
        let write = ProcessInfo.processInfo.environment["WRITE_FUZZ_SEEDS"] == "1"
        for (target, seeds) in FuzzSeeds.all {
            let directory = Self.fuzzDirectory.appendingPathComponent("Corpus/\(target)")
            if write {
                try? FileManager.default.removeItem(at: directory)
                try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
                for (name, bytes) in seeds { try Data(bytes).write(to: directory.appendingPathComponent(name)) }
            }
            let present = try FileManager.default.contentsOfDirectory(atPath: directory.path)
            XCTAssertEqual(Set(present), Set(seeds.keys), "\(target): run WRITE_FUZZ_SEEDS=1 swift test --filter FuzzCorpusTests")
            for (name, bytes) in seeds {
                let stored = try? Data(contentsOf: directory.appendingPathComponent(name))
                XCTAssertEqual(stored.map { Array($0) }, bytes, "\(target)/\(name) differs from its generator")
            }
        }
    }

    func testEverySeedAndRegressionHoldsTheFuzzProperties() throws {
        var inputs = 0
        for (target, check) in Self.checks {
            for folder in ["Corpus", "Regressions"] {
                let directory = Self.fuzzDirectory.appendingPathComponent("\(folder)/\(target)")
                let names = (try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []
                for name in names.sorted() where !name.hasPrefix(".") {
                    let bytes = try Array(Data(contentsOf: directory.appendingPathComponent(name)))
                    XCTAssertEqual(check(FuzzInput(bytes)), [], "\(folder)/\(target)/\(name)")
                    // Every read size too: the split-independence properties must not depend on it.
                    for selector in UInt8(0)..<16 {
                        var variant = bytes
                        if variant.isEmpty { variant = [selector] } else { variant[0] = (variant[0] & 0xF0) | selector }
                        XCTAssertEqual(check(FuzzInput(variant)), [], "\(folder)/\(target)/\(name) read size \(selector + 1)")
                    }
                    inputs += 1
                }
            }
        }
        XCTAssertGreaterThan(inputs, 80, "the corpora are in Fuzz/Corpus")
    }

    /// The decision the differential check compares: framing and where the message ends.
    func testRequestDecisionFindsTheMessageEnd() {
        let good = FuzzInput.encode(Array("5\r\nhello\r\n0\r\n\r\n".utf8), selector: 0)
        XCTAssertEqual(ChunkedCheck.run(FuzzInput(good)), [])
        let incomplete = FuzzInput.encode(Array("5\r\nhel".utf8), selector: 0)
        XCTAssertEqual(ChunkedCheck.run(FuzzInput(incomplete)), [], "incomplete is the same split or whole")
        let decision = RequestDecision(Array("POST /x HTTP/1.1\r\nHost: a\r\nContent-Length: 2\r\n\r\nokGET".utf8))
        XCTAssertEqual(decision.end, 50, "head 48 bytes + 2 body bytes; the rest is the next request")
        XCTAssertEqual(decision.body, "length 2")
    }
}
