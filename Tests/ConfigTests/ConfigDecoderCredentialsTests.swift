import Config
import Foundation
import XCTest

/// Validation of `credentials:`.
final class ConfigDecoderCredentialsTests: XCTestCase {
    private func credential(_ body: String, environment: [String: String] = [:]) -> [String] {
        problemLines("credentials:\n  api:\n" + body, environment: environment)
    }

    func testMissingType() {
        XCTAssertEqual(credential("    token: x\n"), ["c.yaml: credentials.api.type: required key is missing (supported types: static, mca, oauth2, google_service_account, aws)"])
    }

    func testUnknownType() {
        XCTAssertEqual(credential("    type: ldap\n    token: x\n"), [
            "c.yaml: credentials.api.type: unknown credential type 'ldap' (supported types: static, mca, oauth2, google_service_account, aws)",
        ])
        XCTAssertEqual(credential("    type: oauth\n    token: x\n"), [
            "c.yaml: credentials.api.type: unknown credential type 'oauth' (did you mean 'oauth2'?)",
        ])
        XCTAssertEqual(credential("    type: statc\n    token: x\n"), [
            "c.yaml: credentials.api.type: unknown credential type 'statc' (did you mean 'static'?)",
        ])
    }

    func testUnknownKeysStillCheckedWithoutType() {
        XCTAssertEqual(credential("    tokenfile: /x\n"), [
            "c.yaml: credentials.api.type: required key is missing (supported types: static, mca, oauth2, google_service_account, aws)",
            "c.yaml: credentials.api.tokenfile: unknown key (did you mean 'tokenFile'?)",
        ])
    }

    func testCredentialMustBeMapping() {
        XCTAssertEqual(credential("    - a\n"), ["c.yaml: credentials.api: expected a mapping with at least 'type', got a list"])
        XCTAssertEqual(problemLines("credentials:\n  api:\n"), [
            "c.yaml: credentials.api: expected a mapping with at least 'type', got an empty value",
        ])
    }

    func testInvalidName() {
        XCTAssertEqual(problemLines("credentials:\n  \"a.b\":\n    type: static\n    token: x\n"), [
            "c.yaml: credentials.a.b: credential names may contain only letters, digits, '-' and '_'",
        ])
    }

    func testNoneOfTheTokenSources() {
        XCTAssertEqual(credential("    type: static\n"), [
            "c.yaml: credentials.api: a static credential needs exactly one of token, tokenFile or tokenEnv; none is given",
        ])
    }

    func testMoreThanOneTokenSource() {
        let lines = credential("    type: static\n    token: SENTINEL-TOKEN-123\n    tokenEnv: X\n", environment: ["X": "y"])
        XCTAssertEqual(lines, [
            "c.yaml: credentials.api: a static credential needs exactly one of token, tokenFile or tokenEnv; found token and tokenEnv",
        ])
        XCTAssertFalse(lines.joined().contains("SENTINEL"))
    }

    func testEmptyToken() {
        XCTAssertEqual(credential("    type: static\n    token: \"\"\n"), ["c.yaml: credentials.api.token: token is empty"])
        XCTAssertEqual(credential("    type: static\n    token:\n"), ["c.yaml: credentials.api.token: token is empty"])
        XCTAssertEqual(credential("    type: static\n    token: \"   \"\n"), ["c.yaml: credentials.api.token: token is empty"])
    }

    func testTokenWithLineBreakIsRejectedWithoutShowingIt() {
        let lines = credential("    type: static\n    token: \"SENTINEL-TOKEN-123\\r\\nX-Evil: 1\"\n")
        XCTAssertEqual(lines, [
            "c.yaml: credentials.api.token: token contains control characters (such as a line break inside the token)",
        ])
    }

    func testInlineTokenIsTrimmed() throws {
        let config = try XCTUnwrap(parseOK("credentials:\n  api:\n    type: static\n    token: \" abc \"\n"))
        XCTAssertEqual(config.credentials.first?.kind, .staticToken(StaticTokenConfig(source: .inline("abc"))))
    }

    func testNumericTokenIsAString() throws {
        let config = try XCTUnwrap(parseOK("credentials:\n  api:\n    type: static\n    token: 12345\n"))
        XCTAssertEqual(config.credentials.first?.kind, .staticToken(StaticTokenConfig(source: .inline("12345"))))
    }

    func testTokenWrongTypeDoesNotShowValue() {
        XCTAssertEqual(credential("    type: static\n    token: {secret: SENTINEL-TOKEN-123}\n"), [
            "c.yaml: credentials.api.token: expected a string, got a mapping",
        ])
    }

    func testTokenEnv() throws {
        let yaml = "credentials:\n  api:\n    type: static\n    tokenEnv: MY_TOKEN\n"
        let config = try XCTUnwrap(parseOK(yaml, environment: ["MY_TOKEN": "v"]))
        XCTAssertEqual(config.credentials.first?.kind, .staticToken(StaticTokenConfig(source: .env("MY_TOKEN"))))
        XCTAssertEqual(problemLines(yaml), ["c.yaml: credentials.api.tokenEnv: environment variable MY_TOKEN is not set"])
        XCTAssertEqual(problemLines(yaml, environment: ["MY_TOKEN": ""]), [
            "c.yaml: credentials.api.tokenEnv: environment variable MY_TOKEN is empty",
        ])
        XCTAssertEqual(credential("    type: static\n    tokenEnv: \"\"\n"), [
            "c.yaml: credentials.api.tokenEnv: is empty; expected the name of an environment variable holding the token",
        ])
    }

    func testTokenFileWithTrailingNewline() throws {
        let dir = try makeTemporaryDirectory(self)
        let path = dir.appendingPathComponent("token").path
        try "file-token\n".write(toFile: path, atomically: true, encoding: .utf8)
        let config = try XCTUnwrap(parseOK("credentials:\n  api:\n    type: static\n    tokenFile: \"\(path)\"\n"))
        XCTAssertEqual(config.credentials.first?.kind, .staticToken(StaticTokenConfig(source: .file(path))))
        XCTAssertEqual(try SecretSource.file(path).read(environment: [:]), "file-token")
    }

    func testUnreadableTokenFile() throws {
        XCTAssertEqual(credential("    type: static\n    tokenFile: /nonexistent/token\n"), [
            "c.yaml: credentials.api.tokenFile: cannot read token file /nonexistent/token: no such file",
        ])
        let dir = try makeTemporaryDirectory(self)
        XCTAssertEqual(credential("    type: static\n    tokenFile: \"\(dir.path)\"\n"), [
            "c.yaml: credentials.api.tokenFile: cannot read token file \(dir.path): is a directory, not a file",
        ])
    }

    func testEmptyTokenFile() throws {
        let dir = try makeTemporaryDirectory(self)
        let path = dir.appendingPathComponent("token").path
        try "\n".write(toFile: path, atomically: true, encoding: .utf8)
        XCTAssertEqual(credential("    type: static\n    tokenFile: \"\(path)\"\n"), [
            "c.yaml: credentials.api.tokenFile: token file \(path) is empty",
        ])
        XCTAssertEqual(credential("    type: static\n    tokenFile:\n"), [
            "c.yaml: credentials.api.tokenFile: is empty; expected the path of a file holding the token",
        ])
    }

    func testOversizedTokenFile() throws {
        let dir = try makeTemporaryDirectory(self)
        let path = dir.appendingPathComponent("big").path
        try Data(repeating: 0x41, count: 64 * 1024 + 1).write(to: URL(fileURLWithPath: path))
        XCTAssertEqual(credential("    type: static\n    tokenFile: \"\(path)\"\n"), [
            "c.yaml: credentials.api.tokenFile: cannot read token file \(path): is larger than 64 KiB",
        ])
    }

    func testEmptyCredentialsSection() throws {
        XCTAssertEqual(parseOK("credentials: {}\n")?.credentials, [])
    }
}
