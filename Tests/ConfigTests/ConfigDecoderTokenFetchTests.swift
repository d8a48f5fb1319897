import Config
import XCTest

/// `refreshAt`, `defaultLifetime`, `tokenWait` and `unauthorizedRefetchInterval` (shared by mca and oauth2).
final class ConfigDecoderTokenFetchTests: XCTestCase {
    private let oauth2 = """
        credentials:
          p:
            type: oauth2
            tokenUrl: https://idp.test/token
            clientId: c
            secret: s

        """

    private func fetch(_ extra: String, file: StaticString = #filePath, line: UInt = #line) -> TokenFetchSettings? {
        guard case .oauth2(let config) = parseOK(oauth2 + extra, file: file, line: line)?.credentials.first?.kind else { return nil }
        return config.fetch
    }

    func testDefaults() {
        XCTAssertEqual(fetch(""), TokenFetchSettings.default)
        XCTAssertEqual(TokenFetchSettings.default.refreshAt, 0.8)
        XCTAssertEqual(TokenFetchSettings.default.defaultLifetime, .seconds(300))
        XCTAssertEqual(TokenFetchSettings.default.tokenWait, .seconds(5))
        XCTAssertEqual(TokenFetchSettings.default.unauthorizedRefetchInterval, .seconds(10))
    }

    func testValidValues() {
        XCTAssertEqual(fetch("    refreshAt: 50%\n    defaultLifetime: 1h\n    tokenWait: 0s\n"),
                       TokenFetchSettings(refreshAt: 0.5, defaultLifetime: .seconds(3600), tokenWait: .zero))
        XCTAssertEqual(fetch("    refreshAt: \"1%\"\n")?.refreshAt, 0.01)
        XCTAssertEqual(fetch("    refreshAt: 99%\n")?.refreshAt, 0.99)
        XCTAssertEqual(fetch("    refreshAt: 87.5%\n")?.refreshAt, 0.875)
        XCTAssertEqual(fetch("    tokenWait: 250ms\n")?.tokenWait, .milliseconds(250))
        XCTAssertEqual(fetch("    unauthorizedRefetchInterval: 2m\n")?.unauthorizedRefetchInterval, .seconds(120))
    }

    func testInvalidValues() {
        let usage = "expected a percentage of the token lifetime from 1% to 99%, e.g. 80%"
        let cases: [(String, String)] = [
            ("refreshAt: 0.8", "credentials.p.refreshAt: \(usage) (got '0.8')"),
            ("refreshAt: 80", "credentials.p.refreshAt: \(usage) (got '80')"),
            ("refreshAt: abc%", "credentials.p.refreshAt: \(usage) (got 'abc%')"),
            ("refreshAt: \"-5%\"", "credentials.p.refreshAt: \(usage) (got '-5%')"),
            ("refreshAt: 100%", "credentials.p.refreshAt: must be between 1% and 99% (got 100%)"),
            ("refreshAt: 0%", "credentials.p.refreshAt: must be between 1% and 99% (got 0%)"),
            ("refreshAt: 0.5%", "credentials.p.refreshAt: must be between 1% and 99% (got 0.5%)"),
            ("defaultLifetime: 0s", "credentials.p.defaultLifetime: must be greater than 0"),
            ("defaultLifetime: 5", "credentials.p.defaultLifetime: duration '5' has no unit: expected a number followed by ms, s, m or h, e.g. 500ms, 5s, 1.5m"),
            ("tokenWait: -1s", "credentials.p.tokenWait: duration must not be negative"),
            ("tokenWait: [1s]", "credentials.p.tokenWait: expected a string, got a list"),
            ("unauthorizedRefetchInterval: 0s", "credentials.p.unauthorizedRefetchInterval: must be greater than 0"),
        ]
        for (line, expected) in cases {
            XCTAssertEqual(problemLines(oauth2 + "    \(line)\n"), ["c.yaml: \(expected)"], line)
        }
    }
}
