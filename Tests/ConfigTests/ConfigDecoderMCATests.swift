import Config
import Foundation
import XCTest

/// Validation of `type: mca` credentials written in the file.
final class ConfigDecoderMCATests: XCTestCase {
    static let complete = """
        credentials:
          mca:
            type: mca
            serverUrl: "https://mca.example.com/imf-authserver"
            tenantId: "tenant-1"
            clientId: "client-1"
            secret: " SENTINEL-SECRET-123 "

        """

    private func mca(_ yaml: String, environment: [String: String] = [:], file: StaticString = #filePath, line: UInt = #line) -> MCAConfig? {
        guard case .mca(let config) = parseOK(yaml, environment: environment, file: file, line: line)?.credentials.first?.kind else {
            XCTFail("no mca credential", file: file, line: line)
            return nil
        }
        return config
    }

    private func credential(_ body: String, environment: [String: String] = [:]) -> [String] {
        problemLines("credentials:\n  mca:\n    type: mca\n" + body, environment: environment)
    }

    func testCompleteInFile() throws {
        let config = try XCTUnwrap(mca(Self.complete))
        XCTAssertEqual(config, MCAConfig(
            serverUrl: EndpointURL(scheme: "https", host: "mca.example.com", port: 443, path: "/imf-authserver"),
            tenantId: "tenant-1", clientId: "client-1", secret: .inline("SENTINEL-SECRET-123")))
        XCTAssertEqual(config.origins, ["serverUrl": .file, "tenantId": .file, "clientId": .file, "secret": .file])
        XCTAssertEqual(config.fetch, TokenFetchSettings(refreshAt: 0.8, defaultLifetime: .seconds(300), tokenWait: .seconds(5)))
        XCTAssertEqual(config.tls, TLSSettings(caFile: nil, clientCert: nil, clientKey: nil, insecureSkipVerify: false))
        XCTAssertEqual(config.tokenPath, "/imf-authserver/authorization/v1/apps/tenant-1/token")
    }

    func testTokenPath() {
        func path(_ server: String, _ tenant: String = "t-1") -> String {
            MCAConfig(serverUrl: try! EndpointURL.parse(server, allowQuery: false).get(), tenantId: tenant,
                      clientId: "c", secret: .inline("s")).tokenPath
        }
        XCTAssertEqual(path("https://mca.test/imf-authserver"), "/imf-authserver/authorization/v1/apps/t-1/token")
        XCTAssertEqual(path("https://mca.test/imf-authserver/"), "/imf-authserver/authorization/v1/apps/t-1/token")
        XCTAssertEqual(path("https://mca.test"), "/authorization/v1/apps/t-1/token")
        XCTAssertEqual(path("https://mca.test/"), "/authorization/v1/apps/t-1/token")
        XCTAssertEqual(path("https://mca.test/a/b//"), "/a/b/authorization/v1/apps/t-1/token")
        XCTAssertEqual(path("https://mca.test/x", "a b/c?ü~._-"), "/x/authorization/v1/apps/a%20b%2Fc%3F%C3%BC~._-/token")
    }

    func testAppIdAlias() throws {
        let yaml = Self.complete.replacingOccurrences(of: "tenantId:", with: "appId:")
        XCTAssertEqual(mca(yaml)?.tenantId, "tenant-1")
        XCTAssertEqual(mca(yaml)?.origins["tenantId"], .file)
        XCTAssertEqual(problemLines(Self.complete + "    appId: other\n"), [
            "c.yaml: credentials.mca.appId: appId is an alias of tenantId; give only one of them",
        ])
    }

    func testSecretEnvAndFile() throws {
        let withEnv = Self.complete.replacingOccurrences(of: "secret: \" SENTINEL-SECRET-123 \"", with: "secretEnv: MCA_SECRET")
        let config = try XCTUnwrap(mca(withEnv, environment: ["MCA_SECRET": "s"]))
        XCTAssertEqual(config.secret, .env("MCA_SECRET"))
        XCTAssertEqual(config.origins["secret"], .environment("MCA_SECRET"))
        XCTAssertEqual(problemLines(withEnv), ["c.yaml: credentials.mca.secretEnv: environment variable MCA_SECRET is not set"])

        let dir = try makeTemporaryDirectory(self)
        try "file-secret\n".write(to: dir.appendingPathComponent("mca-secret"), atomically: true, encoding: .utf8)
        let configPath = dir.appendingPathComponent("sidecar.yaml").path
        try Self.complete.replacingOccurrences(of: "secret: \" SENTINEL-SECRET-123 \"", with: "secretFile: mca-secret")
            .write(toFile: configPath, atomically: true, encoding: .utf8)
        guard case .mca(let fromFile) = try ConfigLoader.load(path: configPath, environment: [:]).credentials.first?.kind else {
            return XCTFail("no mca credential")
        }
        let secretPath = dir.appendingPathComponent("mca-secret").standardizedFileURL.path
        XCTAssertEqual(fromFile.secret, .file(secretPath))
        XCTAssertEqual(fromFile.origins["secret"], .file)
        XCTAssertEqual(try XCTUnwrap(fromFile.secret).read(environment: [:]), "file-secret")
    }

    func testSecretProblems() throws {
        let base = "    serverUrl: https://m.test\n    tenantId: t\n    clientId: c\n"
        XCTAssertEqual(credential(base + "    secretFile: /nonexistent/secret\n"), [
            "c.yaml: credentials.mca.secretFile: cannot read secret file /nonexistent/secret: no such file",
        ])
        XCTAssertEqual(credential(base + "    secret: \"\"\n"), ["c.yaml: credentials.mca.secret: secret is empty"])
        XCTAssertEqual(credential(base + "    secretEnv: \"\"\n"), [
            "c.yaml: credentials.mca.secretEnv: is empty; expected the name of an environment variable holding the secret",
        ])
        let lines = credential(base + "    secret: \"SENTINEL-SECRET-123\\nX\"\n")
        XCTAssertEqual(lines, [
            "c.yaml: credentials.mca.secret: secret contains control characters (such as a line break inside the secret)",
        ])
        let two = credential(base + "    secret: SENTINEL-SECRET-123\n    secretEnv: X\n", environment: ["X": "y"])
        XCTAssertEqual(two, [
            "c.yaml: credentials.mca: an mca credential takes at most one of secret, secretFile or secretEnv "
                + "(or none, to use VCAP_SERVICES); found secret and secretEnv",
        ])
        XCTAssertFalse((lines + two).joined().contains("SENTINEL"))
    }

    func testInvalidFieldValues() {
        XCTAssertEqual(credential("    serverUrl: mca.example.com\n    tenantId: \"\"\n    clientId: \"a\\tb\"\n    secret: s\n"), [
            "c.yaml: credentials.mca.serverUrl: invalid URL: expected a URL like https://host[:port]/path",
            "c.yaml: credentials.mca.tenantId: is empty",
            "c.yaml: credentials.mca.clientId: contains control characters",
        ])
        XCTAssertEqual(credential("    serverUrl: \"https://m.test/x?y=1\"\n    tenantId: t\n    clientId: c\n    secret: s\n"), [
            "c.yaml: credentials.mca.serverUrl: invalid URL: URL must not have a query",
        ])
        let lines = credential("    serverUrl: \"https://u:SENTINEL-PW@m.test\"\n    tenantId: t\n    clientId: c\n    secret: s\n")
        XCTAssertEqual(lines, ["c.yaml: credentials.mca.serverUrl: invalid URL: URL must not contain userinfo (user@)"])
        XCTAssertEqual(credential("    serverUrl: [a]\n    tenantId: t\n    clientId: c\n    secret: s\n"), [
            "c.yaml: credentials.mca.serverUrl: expected a string, got a list",
        ])
    }

    func testUnknownKeysWithSuggestions() {
        XCTAssertEqual(problemLines(Self.complete + "    tenantID: x\n    secretfile: y\n    secrt: z\n"), [
            "c.yaml: credentials.mca.tenantID: unknown key (did you mean 'tenantId'?)",
            "c.yaml: credentials.mca.secretfile: unknown key (did you mean 'secretFile'?)",
            "c.yaml: credentials.mca.secrt: unknown key (did you mean 'secret'?)",
        ])
    }

    func testHTTPServerURLIsAllowedWithoutTLSKeys() throws {
        let yaml = Self.complete.replacingOccurrences(of: "https://", with: "http://")
        let config = try XCTUnwrap(mca(yaml))
        XCTAssertEqual(config.serverUrl.port, 80)
        XCTAssertFalse(config.serverUrl.isTLS)
        XCTAssertEqual(problemLines(yaml + "    insecureSkipVerify: true\n    caFile: /x\n"), [
            "c.yaml: credentials.mca.insecureSkipVerify: TLS settings need an https:// URL "
                + "(serverUrl is http://mca.example.com:80/imf-authserver)",
            "c.yaml: credentials.mca.caFile: cannot read CA file /x: no such file",
            "c.yaml: credentials.mca.caFile: TLS settings need an https:// URL (serverUrl is http://mca.example.com:80/imf-authserver)",
        ])
    }
}
