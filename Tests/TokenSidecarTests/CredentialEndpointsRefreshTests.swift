import Foundation
import TestSupport
import XCTest

/// Refresh across a token lifetime, with each SDK unchanged (the three at once): an OAuth credential whose tokens
/// live 12 s (`tok-1`, then `tok-2` from the token server when the sidecar refreshes at 80 %),
/// served by the GCE, Azure and MCA endpoints. Each app calls the API, waits past the first
/// token's lifetime (its SDK asks its endpoint again and gets the same placeholder), and calls
/// again: the API (Fixtures/key_api.py) must see `tok-1`, then `tok-2`.
final class CredentialEndpointsRefreshTests: XCTestCase {
    private var directory: URL!
    private var ca: TestCA!
    private var api: FixtureProcess!
    private var tokenServer: FixtureServer!
    private var sidecar: CapturedSidecar!
    private var endpoints = 0
    private let placeholder = "tsp_rotatingPlaceholder00001"
    private let identityHeader = "identity-header-secret-0002"

    override func setUpWithError() throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("endpoints-refresh-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        ca = try TestCA()
        tokenServer = try FixtureServer.tokenServer(["expires_in": 12])
        api = try FixtureProcess(script: "ProxyTests/Fixtures/key_api.py", arguments: [ca.localhostCert, ca.localhostKey, "{dir}/log", "rot1=tok-1", "rot2=tok-2"])
        try (identityHeader + "\n").write(to: file("identity-header"), atomically: true, encoding: .utf8)
        let routes = ["api.gcp.test", "api.azure.test", "api.mca.test"].map { host in
            """
              - host: "\(host):443"
                intercept: true
                upstream: "https://localhost:\(api.port)"
                caFile: \(ca.caCert)
                credential: rotating
            """
        }.joined(separator: "\n")
        let config = try writeConfig("""
            listen: "127.0.0.1:0"
            admin: "127.0.0.1:0"
            timeouts: {connect: 5s, responseHeaders: 10s}
            intercept: {caCertFile: \(file("ca.crt").path)}
            credentials:
              rotating: {type: oauth2, tokenUrl: "http://127.0.0.1:\(tokenServer.port)/token", clientId: app, secret: s, placeholder: \(placeholder)}
            routes:
            \(routes)
            credentialEndpoints:
              listen: "127.0.0.1:0"
              mca: {credential: rotating, tenantId: tenant-1}
              gce: {credential: rotating, projectId: test-project, email: app@test-project.iam.gserviceaccount.com}
              azure: {credential: rotating, identityHeaderFile: \(file("identity-header").path)}
            """)
        sidecar = try CapturedSidecar(configPath: config)
        endpoints = sidecar.credentialEndpointsPort()
    }

    override func tearDown() {
        sidecar = nil
        api = nil
        tokenServer = nil
        try? FileManager.default.removeItem(at: directory)
    }

    private func file(_ name: String) -> URL { directory.appendingPathComponent(name) }

    private let pause = "11"

    func testEachSDKAcrossATokensLifetime() throws {
        // The three apps at once (one token lifetime for all, so the test waits it out once).
        let apps: [(name: String, arguments: [String], environment: [String: String], held: String)] = [
            ("google-auth", [SDKPython.path, FixtureProcess.testsDirectory.appendingPathComponent("TokenSidecarTests/Fixtures/sdk_gce.py").path,
                             "every", pause, "/bearer/rot1", "/bearer/rot2"],
             ["GCE_METADATA_HOST": "127.0.0.1:\(endpoints)", "GCE_METADATA_IP": "127.0.0.1:\(endpoints)"], placeholder),
            ("azure-identity", [SDKPython.path, FixtureProcess.testsDirectory.appendingPathComponent("TokenSidecarTests/Fixtures/sdk_azure.py").path,
                                pause, "/bearer/rot1", "/bearer/rot2"],
             ["IDENTITY_ENDPOINT": "http://127.0.0.1:\(endpoints)/msi/token", "IDENTITY_HEADER": identityHeader], placeholder),
            ("seed SDK app", ["node", FixtureProcess.testsDirectory.appendingPathComponent("TokenSidecarTests/Fixtures/seed_sdk_app.js").path,
                              "tenant-1", "app", "http://127.0.0.1:\(endpoints)", pause, "/bearer/rot1", "/bearer/rot2"], [:], "Bearer \(placeholder)"),
        ]
        let outcomes = Outcomes(count: apps.count)
        let (port, home) = (sidecar.port, directory!)
        // A thread each (concurrentPerform would run only as many as there are cores at once).
        let group = DispatchGroup()
        for index in apps.indices {
            let app = apps[index]
            group.enter()
            Thread.detachNewThread {
                outcomes.set(index, Result { try appOutcome(app.arguments, app.environment, proxy: port, directory: home) })
                group.leave()
            }
        }
        XCTAssertEqual(group.wait(timeout: .now() + 120), .success)
        let log = ((try? String(contentsOf: api.file("log"), encoding: .utf8)) ?? "").split(separator: "\n")
        for (index, app) in apps.enumerated() {
            let result = try parseApp(try XCTUnwrap(outcomes.get(index)).get())
            XCTAssertEqual(result["statuses"] as? [Int], [200, 200], "\(app.name): the API saw tok-1, then tok-2: \(log)")
            XCTAssertEqual(result["held"] as? [String], [app.held, app.held], "\(app.name): the same placeholder across the refresh")
        }
        let issued = ((try? String(contentsOf: tokenServer.file("requests.jsonl"), encoding: .utf8)) ?? "").split(separator: "\n").count
        XCTAssertEqual(issued, 2, "one refresh in the window")
    }
}

/// The apps' runs, filled from several threads.
private final class Outcomes: @unchecked Sendable {
    private let lock = NSLock()
    private var results: [Result<Command.Outcome, any Error>?]

    init(count: Int) { results = Array(repeating: nil, count: count) }

    func set(_ index: Int, _ result: Result<Command.Outcome, any Error>) {
        lock.lock()
        results[index] = result
        lock.unlock()
    }

    func get(_ index: Int) -> Result<Command.Outcome, any Error>? {
        lock.lock()
        defer { lock.unlock() }
        return results[index]
    }
}
