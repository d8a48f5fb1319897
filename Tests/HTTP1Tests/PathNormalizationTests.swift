import HTTP1
import XCTest

/// The path rules match and the upstream receives: normalized, or refused when an upstream could
/// read it otherwise.
final class PathNormalizationTests: XCTestCase {
    private func normalized(_ path: String) -> String? {
        if case .normalized(let text) = PathNormalization.normalize(path[...]) { return text }
        return nil
    }

    private func refusal(_ path: String) -> String? {
        if case .refused(let why) = PathNormalization.normalize(path[...]) { return why }
        return nil
    }

    func testNormalForms() {
        let cases: [(String, String)] = [
            ("/", "/"), ("/a", "/a"), ("/a/", "/a/"), ("//a///b//", "/a/b/"),
            ("/a/./b", "/a/b"), ("/a/b/..", "/a/"), ("/a/b/../c", "/a/c"), ("/a/../../../b", "/b"), ("/..", "/"), ("/.", "/"),
            ("/a/%7Euser", "/a/~user"), ("/%41%62c", "/Abc"), ("/a%2db", "/a-b"), ("/caf%c3%a9", "/caf%C3%A9"),
            ("/a%20b", "/a%20b"), ("/a/..b/c", "/a/..b/c"), ("/a/.b", "/a/.b"),
            ("/a;x=1/b", "/a;x=1/b"), ("/A/B", "/A/B"), ("/a/b/./", "/a/b/"),
        ]
        for (path, expected) in cases { XCTAssertEqual(normalized(path), expected, path) }
    }

    func testAmbiguousPathsAreRefused() {
        let cases: [(String, String)] = [
            ("/a%2Fb", "encoded / or \\"), ("/a%2fb", "encoded / or \\"), ("/a%5Cb", "encoded / or \\"), ("/a%5c..%5cb", "encoded / or \\"),
            ("/a\\..\\b", "a \\"), ("/a/%2e%2e/b", "encoded dot segment"), ("/a/%2E/b", "encoded dot segment"), ("/a/.%2e/b", "encoded dot segment"),
            ("/a/..;/admin", "dot segment with ; parameters"), ("/a/..;x=1/admin", "dot segment with ; parameters"), ("/a/.;/b", "dot segment with ; parameters"),
            ("/a%00b", "NUL"), ("/a%zz", "malformed percent-escape"), ("/a%4", "malformed percent-escape"), ("/a%", "malformed percent-escape"),
            ("a/b", "does not start with /"), ("", "does not start with /"),
        ]
        for (path, reason) in cases {
            XCTAssertTrue(refusal(path)?.contains(reason) ?? false, "\(path): \(refusal(path) ?? "normalized as \(normalized(path) ?? "?")")")
        }
    }

    func testOverlongPathsStayLinear() {
        let long = "/" + Array(repeating: "a/..", count: 20_000).joined(separator: "/") + "/end"
        XCTAssertEqual(normalized(long), "/end")
        let slashes = String(repeating: "/", count: 50_000) + "x"
        XCTAssertEqual(normalized(slashes), "/x")
    }

    func testNormalizingTwiceChangesNothing() {
        for path in ["/a/./b/../c//d/", "/%41/%c3%a9/x", "/a;p/b", "/~/-/_/."] {
            guard let once = normalized(path) else { return XCTFail(path) }
            XCTAssertEqual(normalized(once), once, path)
        }
    }
}
