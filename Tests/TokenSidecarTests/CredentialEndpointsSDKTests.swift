import Foundation
import TestSupport
import XCTest

/// Apps that keep their SDK (issue 69): google-auth on "GCE", azure-identity on "App Service" and
/// an app written as the seed document shows, unchanged, with only environment variables
/// pointing at the sidecar's credential endpoints, call a test API (Fixtures/key_api.py, HTTPS)
/// through `HTTPS_PROXY` that accepts only the real token: the API sees the real token, the app
/// only ever holds placeholders, and a rotated token reaches the API behind the same placeholder.
final class CredentialEndpointsSDKTests: XCTestCase {
    private var directory: URL!
    private var ca: TestCA!
    private var api: FixtureProcess!
    private var sidecar: CapturedSidecar!
    private var endpoints = 0
    private var configPath = ""

    private let realTokens = ["gcp": "realGcpToken0001", "gcp2": "realGcpToken0002", "entra": "realEntraToken0003", "mca": "realMcaToken0004"]
    private let placeholders = ["gcp": "tsp_gcpPlaceholder0000000001", "entra": "tsp_entraPlaceholder00000001", "mca": "tsp_mcaPlaceholder000000001"]
    private let identityHeader = "identity-header-secret-0001"

    override func setUpWithError() throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("endpoints-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        ca = try TestCA()
        let keys = realTokens.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }
        api = try FixtureProcess(script: "ProxyTests/Fixtures/key_api.py", arguments: [ca.localhostCert, ca.localhostKey, "{dir}/log"] + keys)
        for name in ["gcp", "entra", "mca"] { try (realTokens[name]! + "\n").write(to: file("\(name).key"), atomically: true, encoding: .utf8) }
        try (identityHeader + "\n").write(to: file("identity-header"), atomically: true, encoding: .utf8)
        func route(_ host: String, _ credential: String) -> String {
            """
              - host: "\(host):443"
                intercept: true
                upstream: "https://localhost:\(api.port)"
                caFile: \(ca.caCert)
                credential: \(credential)
            """
        }
        configPath = try writeConfig("""
            listen: "127.0.0.1:0"
            admin: "127.0.0.1:0"
            timeouts: {connect: 5s, responseHeaders: 10s}
            intercept: {caCertFile: \(file("ca.crt").path)}
            credentials:
              gcp: {type: static, tokenFile: \(file("gcp.key").path), placeholder: \(placeholders["gcp"]!)}
              entra: {type: static, tokenFile: \(file("entra.key").path), placeholder: \(placeholders["entra"]!)}
              mca: {type: static, tokenFile: \(file("mca.key").path), placeholder: \(placeholders["mca"]!)}
            routes:
            \(route("api.gcp.test", "gcp"))
            \(route("api.azure.test", "entra"))
            \(route("api.mca.test", "mca"))
            credentialEndpoints:
              listen: "127.0.0.1:0"
              mca: {credential: mca, tenantId: tenant-1, clientId: client-1}
              gce: {credential: gcp, projectId: test-project, email: app@test-project.iam.gserviceaccount.com}
              azure: {credential: entra, identityHeaderFile: \(file("identity-header").path)}
            """)
        sidecar = try CapturedSidecar(configPath: configPath)
        endpoints = sidecar.credentialEndpointsPort()
        XCTAssertNotEqual(endpoints, 0, sidecar.text())
    }

    override func tearDown() {
        sidecar = nil
        api = nil
        try? FileManager.default.removeItem(at: directory)
    }

    private func file(_ name: String) -> URL { directory.appendingPathComponent(name) }

    private func app(_ arguments: [String], _ environment: [String: String]) throws -> [String: Any] {
        try runApp(arguments, environment, proxy: sidecar.port, directory: directory)
    }

    /// The test API's log: one line per request that reached it.
    private func apiLog() -> [[String: Any]] {
        let text = (try? String(contentsOf: api.file("log"), encoding: .utf8)) ?? ""
        return text.split(separator: "\n").compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
    }

    func testGoogleAuthOnGCEGetsPlaceholdersAndTheAPIGetsTheRealTokenAcrossARotation() throws {
        let result = try app([SDKPython.path, FixtureProcess.testsDirectory.appendingPathComponent("TokenSidecarTests/Fixtures/sdk_gce.py").path,
                              "rotate", file("gcp.key").path, realTokens["gcp2"]!],
                             ["GCE_METADATA_HOST": "127.0.0.1:\(endpoints)", "GCE_METADATA_IP": "127.0.0.1:\(endpoints)"])
        XCTAssertEqual(result["statuses"] as? [Int], [200, 200], "\(apiLog())")
        XCTAssertEqual(result["held"] as? [String], [placeholders["gcp"]!, placeholders["gcp"]!], "the app only ever held the placeholder")
        XCTAssertEqual(result["project"] as? String, "test-project")
        XCTAssertEqual(result["email"] as? String, "app@test-project.iam.gserviceaccount.com")
        XCTAssertEqual(apiLog().map { $0["ok"] as? Bool }, [true, true], "the API saw the real token, then the rotated one")
    }

    func testAzureIdentityOnAppServiceGetsThePlaceholder() throws {
        let result = try app([SDKPython.path, FixtureProcess.testsDirectory.appendingPathComponent("TokenSidecarTests/Fixtures/sdk_azure.py").path],
                             ["IDENTITY_ENDPOINT": "http://127.0.0.1:\(endpoints)/msi/token", "IDENTITY_HEADER": identityHeader])
        XCTAssertEqual(result["statuses"] as? [Int], [200], "\(apiLog())")
        XCTAssertEqual(result["held"] as? [String], [placeholders["entra"]!])
        XCTAssertEqual(apiLog().map { $0["ok"] as? Bool }, [true])
    }

    func testAzureIdentityOnIMDSGetsThePlaceholder() throws {
        let result = try app([SDKPython.path, FixtureProcess.testsDirectory.appendingPathComponent("TokenSidecarTests/Fixtures/sdk_azure.py").path],
                             ["AZURE_POD_IDENTITY_AUTHORITY_HOST": "http://127.0.0.1:\(endpoints)"])
        XCTAssertEqual(result["statuses"] as? [Int], [200], "\(apiLog())")
        XCTAssertEqual(result["held"] as? [String], [placeholders["entra"]!])
        XCTAssertEqual(apiLog().map { $0["ok"] as? Bool }, [true])
    }

    func testTheSeedSDKsAppGetsThePlaceholder() throws {
        let result = try app(["node", FixtureProcess.testsDirectory.appendingPathComponent("TokenSidecarTests/Fixtures/seed_sdk_app.js").path,
                              "tenant-1", "client-1", "http://127.0.0.1:\(endpoints)"], [:])
        XCTAssertEqual(result["statuses"] as? [Int], [200], "\(apiLog())")
        XCTAssertEqual(result["held"] as? [String], ["Bearer \(placeholders["mca"]!)"])
        XCTAssertEqual(apiLog().map { $0["ok"] as? Bool }, [true])
    }

    func testRefusalsOverTheSocketAndAPlaceholderOffItsRoute() throws {
        func ask(_ head: String) -> (status: Int, headers: [String: String], body: String)? {
            guard let client = SimpleClient(port: endpoints) else { return nil }
            client.send(head)
            return client.response()
        }
        let token = "/computeMetadata/v1/instance/service-accounts/default/token"
        XCTAssertEqual(ask("GET \(token) HTTP/1.1\r\nHost: metadata\r\n\r\n")?.status, 403, "no Metadata-Flavor")
        XCTAssertEqual(ask("GET \(token) HTTP/1.1\r\nHost: metadata\r\nMetadata-Flavor: Google\r\nX-Forwarded-For: 10.0.0.1\r\n\r\n")?.status, 403)
        XCTAssertEqual(ask("POST \(token) HTTP/1.1\r\nHost: metadata\r\nMetadata-Flavor: Google\r\nContent-Length: 0\r\n\r\n")?.status, 405)
        XCTAssertEqual(ask("GET /latest/meta-data/ HTTP/1.1\r\nHost: metadata\r\n\r\n")?.status, 404)
        XCTAssertEqual(ask("GET /msi/token?api-version=2019-08-01&resource=x HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")?.status, 401, "no identity header")
        let granted = ask("GET \(token) HTTP/1.1\r\nHost: metadata\r\nMetadata-Flavor: Google\r\n\r\n")
        XCTAssertEqual(granted?.status, 200)
        XCTAssertTrue(granted?.body.contains(placeholders["gcp"]!) ?? false)
        XCTAssertFalse(granted?.body.contains(realTokens["gcp"]!) ?? true, "never the real token")

        // The GCE placeholder sent to the Azure API's route: refused, nothing forwarded.
        let proxy = try XCTUnwrap(SimpleClient(port: sidecar.port))
        proxy.send("GET http://api.azure.test:443/bearer/entra HTTP/1.1\r\nHost: api.azure.test:443\r\nAuthorization: Bearer \(placeholders["gcp"]!)\r\n\r\n")
        let refused = try XCTUnwrap(proxy.response())
        XCTAssertEqual(refused.status, 403)
        XCTAssertNotNil(refused.headers.first { $0.key.lowercased() == "proxy-status" })
        XCTAssertEqual(apiLog().count, 0, "nothing reached the API")

        // Counted, logged without a value.
        let admin = try XCTUnwrap(SimpleClient(port: sidecar.adminPort))
        admin.send("GET /metrics HTTP/1.1\r\nHost: admin\r\n\r\n")
        let metrics = try XCTUnwrap(admin.response()).body
        XCTAssertTrue(metrics.contains(#"token_sidecar_credential_endpoint_requests_total{endpoint="gce",credential="gcp",status="403"} 2"#), metrics)
        XCTAssertTrue(metrics.contains(#"token_sidecar_credential_endpoint_requests_total{endpoint="unknown",credential="",status="404"} 1"#), metrics)
        // Log lines go out through the sidecar's writer thread: wait for them (bounded).
        let deadline = Date().addingTimeInterval(5)
        while !sidecar.text().contains("\"status\":\"404\"") && Date() < deadline { Thread.sleep(forTimeInterval: 0.05) }
        let logs = sidecar.text()
        XCTAssertTrue(logs.contains("\"msg\":\"credential endpoint\""), logs)
        for secret in Array(realTokens.values) + Array(placeholders.values) + [identityHeader] {
            XCTAssertFalse(logs.contains(secret), "the log holds no token, placeholder or identity header")
        }
    }

    func testAReloadChangesWhatTheEndpointsSay() throws {
        func email() -> String? {
            guard let client = SimpleClient(port: endpoints) else { return nil }
            client.send("GET /computeMetadata/v1/instance/service-accounts/default/email HTTP/1.1\r\nHost: metadata\r\nMetadata-Flavor: Google\r\n\r\n")
            return client.response()?.body
        }
        XCTAssertEqual(email(), "app@test-project.iam.gserviceaccount.com")
        let text = try String(contentsOfFile: configPath, encoding: .utf8)
        try text.replacingOccurrences(of: "email: app@test-project", with: "email: other@test-project").write(toFile: configPath, atomically: true, encoding: .utf8)
        let admin = try XCTUnwrap(SimpleClient(port: sidecar.adminPort))
        admin.send("POST /reload HTTP/1.1\r\nHost: admin\r\nContent-Length: 0\r\n\r\n")
        XCTAssertEqual(admin.response()?.status, 200)
        XCTAssertEqual(email(), "other@test-project.iam.gserviceaccount.com", "the reloaded endpoint, on the same listener")
    }
}

/// Runs an app (`arguments`) as a pod's app runs beside the sidecar: only the proxy at `proxy`,
/// the sidecar's CA (`directory/ca.crt`), a home of its own and `environment`; its last output
/// line as JSON.
func runApp(_ arguments: [String], _ environment: [String: String], proxy: Int, directory: URL,
            file: StaticString = #filePath, line: UInt = #line) throws -> [String: Any] {
    try parseApp(appOutcome(arguments, environment, proxy: proxy, directory: directory), file: file, line: line)
}

/// ``runApp(_:_:proxy:directory:file:line:)``'s run, without checking it (callable from any thread).
func appOutcome(_ arguments: [String], _ environment: [String: String], proxy: Int, directory: URL) throws -> Command.Outcome {
    let proxyURL = "http://127.0.0.1:\(proxy)"
    let ca = directory.appendingPathComponent("ca.crt").path
    return try Command.run(arguments, environment: [
        "HTTPS_PROXY": proxyURL, "https_proxy": proxyURL, "NO_PROXY": "", "no_proxy": "", "HOME": directory.path,
        "SSL_CERT_FILE": ca, "REQUESTS_CA_BUNDLE": ca, "NODE_EXTRA_CA_CERTS": ca,
    ].merging(environment) { _, given in given }, timeout: 90)
}

/// An app's run checked: exit 0, its last output line as JSON.
func parseApp(_ outcome: Command.Outcome, file: StaticString = #filePath, line: UInt = #line) throws -> [String: Any] {
    XCTAssertEqual(outcome.status, 0, outcome.err, file: file, line: line)
    let last = try XCTUnwrap(outcome.out.split(separator: "\n").last, outcome.err, file: file, line: line)
    return try XCTUnwrap(JSONSerialization.jsonObject(with: Data(last.utf8)) as? [String: Any], file: file, line: line)
}
