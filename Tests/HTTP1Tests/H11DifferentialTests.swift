import Foundation
import HTTP1Fuzzing
import XCTest

/// The request-head corpus framed by `HTTP1` and by h11 (an independent strict parser, from
/// PyPI in the test-only virtual environment `make h11-venv` makes): accept or reject, method,
/// target, body framing and the end of the message must agree, except where
/// ``documentedDifferences`` says why they may not, citing RFC 9112/9110. An undocumented
/// disagreement fails, and so does a documented one that no longer occurs (the table must stay
/// true). Outside CI the test is skipped when the environment is missing; in CI it must run.
final class H11DifferentialTests: XCTestCase {
    /// Corpus entry → why HTTP1 and h11 may decide differently.
    static let documentedDifferences: [String: String] = [
        "malformed-bare-lf-endings":
            "RFC 9112 §2.2 lets a recipient accept a bare LF as a line terminator (h11 does); a proxy that accepts "
            + "what the next hop may not is a smuggling vector, so HTTP1 requires CRLF.",
        "valid-leading-empty-lines":
            "RFC 9112 §2.2: a server SHOULD ignore at least one empty line before the request line. HTTP1 ignores up "
            + "to four; h11 ignores none at the start of a connection.",
        "edge-content-length-list":
            "`Content-Length: 5, 5`: RFC 9110 §8.6 lets a recipient reject a list or reduce it to one value. h11 "
            + "reduces it; HTTP1 rejects it, since a hop that reads it differently would frame a different body.",
        "malformed-two-cl":
            "Two identical Content-Length lines: as above (RFC 9110 §8.6, RFC 9112 §6.3 item 5). h11 merges them; "
            + "HTTP1 rejects any repeated Content-Length line in a request.",
        "malformed-cl-and-te":
            "RFC 9112 §6.1: a server MAY reject a request with both Content-Length and Transfer-Encoding, or frame it "
            + "by Transfer-Encoding and close afterwards. h11 does the latter; HTTP1 rejects it (the classic smuggling shape).",
        "malformed-te-in-http-1-0":
            "RFC 9112 §6.1: a server MAY treat Transfer-Encoding in an HTTP/1.0 request as faulty and close. h11 "
            + "frames it as chunked; HTTP1 rejects it, since an HTTP/1.0 hop would not.",
        "malformed-obs-fold":
            "RFC 9112 §5.2: a server MUST reject obs-fold with 400 or replace it with SP. h11 unfolds; HTTP1 rejects "
            + "(unfolding differently from the next hop is a smuggling risk).",
        "malformed-control-char-in-field":
            "RFC 9110 §5.5: a field value is VCHAR, obs-text, SP and HTAB; h11 accepts other control characters, "
            + "HTTP1 rejects them.",
        "malformed-content-length-9223372036854775808":
            "RFC 9110 §8.6: recipients MUST anticipate large numerals and prevent overflow. h11 has unbounded "
            + "integers; HTTP1 rejects a length beyond 2^63 − 1.",
        "malformed-content-length-99999999999999999999":
            "As above: beyond 2^63 − 1, rejected by HTTP1, accepted by h11's unbounded integers.",
        "malformed-chunk-size-overflow":
            "RFC 9112 §7.1: recipients MUST prevent overflow when parsing chunk sizes. h11 reads a 19-digit size as a "
            + "huge chunk; HTTP1 rejects a size beyond 64 bits.",
        "malformed-chunk-extension-4-kib":
            "RFC 9112 §7.1.1 leaves the length of chunk extensions to the recipient; HTTP1 limits them to 4 KiB, h11 "
            + "has no limit.",
        "malformed-head-64-kib":
            "HTTP1 refuses a head over 64 KiB with 431 (RFC 6585 §5); h11's limit applies to incomplete data only.",
        "malformed-100-fields":
            "HTTP1 refuses more than 100 field lines with 431 (RFC 6585 §5); h11 has no such limit.",
        "malformed-http-1-2":
            "RFC 9112 §2.3: HTTP1 accepts the versions whose framing it implements, 1.0 and 1.1; h11 accepts any 1.x.",
        "malformed-http-2-0":
            "As above: h11 parses `HTTP/2.0` on an HTTP/1 connection as a version; HTTP1 rejects it.",
        "malformed-authority-disagrees-with-host":
            "RFC 9112 §3.2.2: with absolute-form the target's authority wins and Host is replaced. HTTP1 rejects a "
            + "disagreement instead: routing by one and forwarding the other would let a client pick its route. "
            + "h11 does not look at the target.",
        "malformed-userinfo":
            "RFC 9110 §4.2.4: userinfo in an http(s) URI is invalid; HTTP1 rejects it, h11 does not parse targets.",
        "malformed-fragment":
            "RFC 9112 §3.2: a request target has no fragment; HTTP1 rejects one, h11 does not parse targets.",
        "valid-get-absolute-empty-path":
            "Not a framing difference: HTTP1 normalizes an empty absolute-form path to `/` (RFC 9110 §4.2.3), "
            + "h11 reports the target as sent.",
    ]

    func testEveryCorpusRequestIsFramedAsH11FramesItOrTheDifferenceIsDocumented() throws {
        guard let python = Self.h11Python() else {
            if ProcessInfo.processInfo.environment["CI"] == "true" { XCTFail("no h11 environment: run make h11-venv") }
            throw XCTSkip("no h11 virtual environment (make h11-venv)")
        }
        let messages = FuzzSeeds.requestHeads.mapValues { FuzzInput($0).message }
        let ours = messages.mapValues { RequestDecision($0) }
        let theirs = try Self.h11Decisions(messages, python: python)

        var disagreements: [String: [String]] = [:]
        for (name, decision) in ours {
            guard let reference = theirs[name] else {
                XCTFail("h11 gave no decision for \(name)")
                continue
            }
            let differences = Self.compare(decision, reference)
            if !differences.isEmpty { disagreements[name] = differences }
        }
        if ProcessInfo.processInfo.environment["H11_REPORT"] == "1" {
            for (name, differences) in disagreements.sorted(by: { $0.key < $1.key }) {
                print("H11-DIFF \(name): \(differences.joined(separator: "; "))")
            }
        }
        for (name, differences) in disagreements.sorted(by: { $0.key < $1.key })
        where Self.documentedDifferences[name] == nil {
            XCTFail("undocumented disagreement with h11 on \(name): \(differences.joined(separator: "; "))")
        }
        for name in Self.documentedDifferences.keys.sorted() where disagreements[name] == nil && ours[name] != nil {
            XCTFail("documented difference \(name) no longer occurs: remove it from the table")
        }
        XCTAssertEqual(Set(Self.documentedDifferences.keys).subtracting(ours.keys), [], "table names a missing corpus entry")
        // The comparison is not vacuous: most of the corpus is decided, and decided alike.
        XCTAssertGreaterThan(ours.count - disagreements.count, 40)
    }

    /// Field-by-field differences; rejection reasons are not compared (their wording differs).
    static func compare(_ ours: RequestDecision, _ theirs: [String: Any]) -> [String] {
        let accepted = theirs["accepted"] as? Bool ?? false
        guard ours.accepted == accepted else {
            return ["HTTP1 \(ours.accepted ? "accepts" : "rejects (\(ours.reason ?? ""))"), "
                    + "h11 \(accepted ? "accepts" : "rejects (\(theirs["reason"] as? String ?? ""))")"]
        }
        guard accepted else { return [] }
        var differences: [String] = []
        let pairs: [(String, String?, String?)] = [
            ("method", ours.method, theirs["method"] as? String),
            ("target", ours.target, theirs["target"] as? String),
            ("body", ours.body, theirs["body"] as? String),
            ("end", ours.end.map(String.init), (theirs["end"] as? Int).map(String.init)),
        ]
        for (field, mine, reference) in pairs where mine != reference {
            differences.append("\(field): HTTP1 \(mine ?? "nil"), h11 \(reference ?? "nil")")
        }
        return differences
    }

    /// Runs Fuzz/h11_decide.py on every message (sent as hex, answered as JSON).
    static func h11Decisions(_ messages: [String: [UInt8]], python: String) throws -> [String: [String: Any]] {
        let script = FuzzCorpusTests.fuzzDirectory.appendingPathComponent("h11_decide.py").path
        let hexed = messages.mapValues { $0.map { String(format: "%02x", $0) }.joined() }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: python)
        process.arguments = [script]
        let input = Pipe(), output = Pipe()
        process.standardInput = input
        process.standardOutput = output
        try process.run()
        input.fileHandleForWriting.write(try JSONSerialization.data(withJSONObject: hexed))
        try input.fileHandleForWriting.close()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        XCTAssertEqual(process.terminationStatus, 0, "h11_decide.py failed")
        return try JSONSerialization.jsonObject(with: data) as? [String: [String: Any]] ?? [:]
    }

    /// The virtual environment's python (H11_PYTHON, else .build-h11/bin/python3 in the repo).
    static func h11Python() -> String? {
        let repo = FuzzCorpusTests.fuzzDirectory.deletingLastPathComponent()
        let candidate = ProcessInfo.processInfo.environment["H11_PYTHON"]
            ?? repo.appendingPathComponent(".build-h11/bin/python3").path
        return FileManager.default.isExecutableFile(atPath: candidate) ? candidate : nil
    }
}
