import Config
import XCTest

final class HostPatternTests: XCTestCase {
    func testParseForms() {
        XCTAssertEqual(pattern("api.test"), HostPattern(kind: .exact("api.test"), port: 80))
        XCTAssertEqual(pattern("API.Test.:8080"), HostPattern(kind: .exact("api.test"), port: 8080))
        XCTAssertEqual(pattern("*.Example.com"), HostPattern(kind: .suffix(".example.com"), port: 80))
        XCTAssertEqual(pattern("*.example.com:8443"), HostPattern(kind: .suffix(".example.com"), port: 8443))
        XCTAssertEqual(pattern("[::1]:8080"), HostPattern(kind: .exact("::1"), port: 8080))
        XCTAssertEqual(pattern("10.0.0.1"), HostPattern(kind: .exact("10.0.0.1"), port: 80))
    }

    func testDescription() {
        XCTAssertEqual(pattern("api.test").description, "api.test:80")
        XCTAssertEqual(pattern("*.example.com:8443").description, "*.example.com:8443")
        XCTAssertEqual(pattern("[::1]:8080").description, "[::1]:8080")
    }

    func testRejects() {
        for text in ["", "*", "*.", "**.a.test", "a*.test", "a.*", "http://a.test", "a.test/", "u@a.test",
                     "a..test", ".a.test", "a.test:-1", "a.test:65536", "a test", "::1", "[::1", "a.test?x"] {
            if case .success(let parsed) = HostPattern.parse(text) {
                XCTFail("\(text) parsed as \(parsed)")
            }
        }
    }

    func testExactMatching() {
        let p = pattern("api.test")
        XCTAssertTrue(p.matches(host: "api.test", port: 80))
        XCTAssertTrue(p.matches(host: "API.TEST", port: 80))
        XCTAssertTrue(p.matches(host: "api.test.", port: 80))
        XCTAssertFalse(p.matches(host: "api.test", port: 8080))
        XCTAssertFalse(p.matches(host: "x.api.test", port: 80))
        XCTAssertFalse(p.matches(host: "api.tes", port: 80))
        XCTAssertTrue(pattern("api.test:8080").matches(host: "api.test", port: 8080))
        XCTAssertFalse(pattern("api.test:8080").matches(host: "api.test", port: 80))
    }

    func testIPv6Matching() {
        let p = pattern("[::1]:8080")
        XCTAssertTrue(p.matches(host: "::1", port: 8080))
        XCTAssertTrue(p.matches(host: "[::1]", port: 8080))
    }

    func testWildcardMatching() {
        let p = pattern("*.example.com")
        XCTAssertTrue(p.matches(host: "a.example.com", port: 80))
        XCTAssertTrue(p.matches(host: "a.b.example.com", port: 80))
        XCTAssertTrue(p.matches(host: "A.Example.COM.", port: 80))
        XCTAssertFalse(p.matches(host: "example.com", port: 80))
        XCTAssertFalse(p.matches(host: ".example.com", port: 80))
        XCTAssertFalse(p.matches(host: "badexample.com", port: 80))
        XCTAssertFalse(p.matches(host: "a.example.com.evil", port: 80))
        XCTAssertFalse(p.matches(host: "a.example.com", port: 443))
        XCTAssertTrue(pattern("*.example.com:8443").matches(host: "x.example.com", port: 8443))
    }
}
