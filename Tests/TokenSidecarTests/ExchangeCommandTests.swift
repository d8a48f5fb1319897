import Crypto
import EventLoop
import Foundation
import TestSupport
import XCTest

/// Token exchange and per-request scopes through the binary: `check` renders them without a
/// secret, and a running sidecar that exchanged callers' tokens writes no subject, actor token or
/// client secret to its logs, `/tokens`, `/metrics` or the status page — only fingerprints and counts.
final class ExchangeCommandTests: XCTestCase {
    private let clientSecret = "sts-client-secret-7f3a"

    /// The verifying STS and its backend (ProxyTests/Fixtures/sts_server.py).
    private func startSTS() throws -> (sts: FixtureServer, backendPort: Int) {
        let policy: [String: Any] = ["client_id": "gateway", "client_secret": clientSecret, "allowed_audiences": ["orders"]]
        let sts = try FixtureServer(script: FixtureProcess.testsDirectory.appendingPathComponent("ProxyTests/Fixtures/sts_server.py"),
                                    arguments: ["--dir", "{dir}"]) { try FixtureProcess.writeJSON(policy, to: "policy.json", in: $0) }
        let text = try String(contentsOf: sts.file("backend_port"), encoding: .utf8)
        return (sts, try XCTUnwrap(Int(text.trimmingCharacters(in: .whitespacesAndNewlines))))
    }

    private func mint(_ sts: FixtureServer, _ subject: String, kind: String = "subject") throws -> String {
        let result = try Command.run(["curl", "-q", "-sf", "--data-urlencode", "sub=\(subject)", "--data-urlencode", "ttl=600",
                                      "--data-urlencode", "kind=\(kind)", "http://127.0.0.1:\(sts.port)/mint"])
        return result.out.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    func testExchangedCallersAppearOnlyAsFingerprints() throws {
        let (sts, backendPort) = try startSTS()
        let actorFile = FileManager.default.temporaryDirectory.appendingPathComponent("actor-\(UUID().uuidString)")
        let actor = try mint(sts, "system:serviceaccount:shop:gateway", kind: "actor")
        try actor.write(to: actorFile, atomically: true, encoding: .utf8)
        addTeardownBlock { try? FileManager.default.removeItem(at: actorFile) }
        let config = try writeConfig("""
        listen: "127.0.0.1:0"
        admin: "127.0.0.1:0"
        logLevel: debug
        credentials:
          sts:
            type: oauth2
            tokenUrl: "http://127.0.0.1:\(sts.port)/token"
            clientId: gateway
            secretEnv: STS_SECRET
        routes:
          - host: "orders.test"
            upstream: "http://127.0.0.1:\(backendPort)"
            credential: sts
            clientAuthorization: exchange
            exchange: {audience: orders, actorTokenFile: "\(actorFile.path)"}
          - host: "reports.test"
            upstream: "http://127.0.0.1:\(backendPort)"
            credential: sts
            scopeHeader: Token-Sidecar-Scope
            allowedScopes: [read, write]
        """)
        let environment = ["STS_SECRET": clientSecret]
        let check = try runSidecar(["check", "--config", config], environment: environment)
        XCTAssertEqual(check.status, 0, check.err)
        XCTAssertTrue(check.out.contains("clientAuthorization: exchange") && check.out.contains("allowedScopes: [\"read\", \"write\"]"), check.out)
        XCTAssertFalse(check.out.contains(clientSecret) || check.err.contains(clientSecret))

        let sidecar = try CapturedSidecar(configPath: config, environment: environment)
        let subjects = try ["alice", "bob"].map { try mint(sts, $0) }
        for subject in subjects {
            let client = try XCTUnwrap(SimpleClient(port: sidecar.port))
            client.send("GET /orders HTTP/1.1\r\nHost: orders.test\r\nAuthorization: Bearer \(subject)\r\n\r\n")
            XCTAssertEqual(client.response()?.status, 200)
        }
        let reports = try XCTUnwrap(SimpleClient(port: sidecar.port))
        reports.send("GET /r HTTP/1.1\r\nHost: reports.test\r\nToken-Sidecar-Scope: read\r\n\r\n")
        XCTAssertEqual(reports.response()?.status, 200)

        var admin: [String: String] = [:]
        for target in ["/tokens", "/metrics", "/", "/readyz"] {
            let client = try XCTUnwrap(SimpleClient(port: sidecar.adminPort))
            client.send("GET \(target) HTTP/1.1\r\nHost: admin\r\n\r\n")
            admin[target] = client.response()?.body ?? ""
        }
        let tokens = try XCTUnwrap(admin["/tokens"])
        for subject in subjects {
            XCTAssertTrue(tokens.contains("subject=sha256:\(Digest.sha256Hex(subject).prefix(8))"), "listed by the subject's fingerprint")
        }
        XCTAssertTrue(tokens.contains("scope=read"))
        XCTAssertTrue(admin["/metrics"]?.contains("token_sidecar_per_request_tokens{credential=\"sts\",route=\"orders.test") == true,
                      admin["/metrics"] ?? "")
        XCTAssertTrue(admin["/readyz"]?.contains("sts") != true, "a credential used only per request does not hold readiness back")
        // (The access log is written by its own thread: the last request's line may come a
        // moment after its response.)
        XCTAssertTrue(eventually { sidecar.text().contains("\"scope\":\"read\"") }, "the access log says which scope set a request asked for")
        let logs = sidecar.text()
        XCTAssertTrue(logs.contains("\"auth\":\"exchanged\""), "the access log says the token was exchanged")
        let everything = ([logs, check.out, check.err] + admin.values).joined(separator: "\n")
        for secret in subjects + [actor, clientSecret] {
            XCTAssertFalse(everything.contains(secret), "a subject, actor token or secret leaked")
            XCTAssertFalse(everything.contains(String(secret.suffix(43))), "a token's signature leaked")
        }
    }
}
