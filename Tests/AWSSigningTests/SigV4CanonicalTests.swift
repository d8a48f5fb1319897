@testable import AWSSigning
import XCTest

/// The canonical request's parts beyond AWS's published cases.
final class SigV4CanonicalTests: XCTestCase {
    /// A path that needs no normalizing is encoded whole; every path of up to six characters
    /// from `/ . a %` and a space gets the same canonical URI that way as through normalizing
    /// and encoding segment by segment.
    func testTheShortcutForNormalPathsGivesWhatNormalizingGives() {
        let alphabet: [Character] = ["/", ".", "a", "%", " "]
        var paths: [String] = [""]
        var frontier: [String] = [""]
        for _ in 0..<6 {
            frontier = frontier.flatMap { prefix in alphabet.map { prefix + String($0) } }
            paths += frontier
        }
        XCTAssertEqual(paths.count, 19_531)
        var shortcuts = 0
        for path in paths {
            var fast: [UInt8] = [], slow: [UInt8] = []
            SigV4Canonical.appendURI(&fast, Substring(path), normalize: true)
            SigV4Canonical.appendURI(&slow, Substring(path), normalize: true, shortcut: false)
            XCTAssertEqual(String(decoding: fast, as: UTF8.self), String(decoding: slow, as: UTF8.self), path)
            if SigV4Canonical.isNormal(Substring(path).utf8) { shortcuts += 1 }
        }
        XCTAssertGreaterThan(shortcuts, 1_000, "the shortcut was taken")
        XCTAssertEqual(SigV4Canonical.uri("/a b/%41/", normalize: true), "/a%20b/%2541/", "an escape is encoded again")
        XCTAssertEqual(SigV4Canonical.uri("/a//./b/../c", normalize: true), "/a/c")
    }

    /// Header values trimmed, inner runs of whitespace made one space, several fields joined by `,`.
    func testHeaderLines() {
        var out: [UInt8] = []
        SigV4Canonical.appendHeader(&out, name: "my-header", values: [Array("  a   b \t c  ".utf8), Array("d".utf8), []])
        XCTAssertEqual(String(decoding: out, as: UTF8.self), "my-header:a b c,d,\n")
    }

    /// Pairs sorted by name then value as bytes, a bare name given an empty value, escapes
    /// decoded and encoded again in the strict set (`+` stays a plus, encoded), invalid UTF-8
    /// as the SDKs' strings hold it (U+FFFD).
    func testCanonicalQueries() {
        XCTAssertEqual(SigV4Canonical.canonicalQuery("b=2&a=1&a=0&&"), "a=0&a=1&b=2")
        XCTAssertEqual(SigV4Canonical.canonicalQuery("x&Y=a%2fb c+d"), "Y=a%2Fb%20c%2Bd&x=")
        XCTAssertEqual(SigV4Canonical.canonicalQuery("k=%FF"), "k=%EF%BF%BD")
        XCTAssertEqual(SigV4Canonical.canonicalQuery("a-=1&a=2&a~=3&a.=4"), "a=2&a-=1&a.=4&a~=3", "by name, a prefix first")
    }
}
