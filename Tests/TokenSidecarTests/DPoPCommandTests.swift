import Foundation
import TestSupport
import XCTest

/// DPoP through the binary: `check` renders the setting and refuses an unusable key file (exit 2,
/// naming the file); a running sidecar shows the token type and the key's thumbprint on
/// `/tokens`, `/metrics` and the status page, and never the key.
final class DPoPCommandTests: XCTestCase {
    private func keyFile(_ text: String) throws -> String {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("dpop-\(UUID().uuidString).pem")
        try text.write(to: url, atomically: true, encoding: .utf8)
        addTeardownBlock { try? FileManager.default.removeItem(at: url) }
        return url.path
    }

    private func config(tokenURL: String, backendPort: Int, dpop: String) throws -> String {
        try writeConfig("""
        listen: "127.0.0.1:0"
        admin: "127.0.0.1:0"
        logLevel: debug
        credentials:
          bank:
            type: oauth2
            tokenUrl: "\(tokenURL)"
            clientId: bank-client
            secretEnv: BANK_SECRET
            dpop: \(dpop)
        routes:
          - host: "accounts.test"
            upstream: "http://127.0.0.1:\(backendPort)"
            credential: bank
        """)
    }

    func testAnUnusableKeyFileStopsCheckAndRunNamingTheFile() throws {
        for (contents, why) in [("not a key", "garbage"),
                                (try Command.run(["openssl", "genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:1024"]).out, "a short RSA key")] {
            let path = try keyFile(contents)
            let config = try config(tokenURL: "http://127.0.0.1:9/token", backendPort: 9, dpop: "{keyFile: \"\(path)\"}")
            for command in ["check", "run"] {
                let outcome = try runSidecar([command, "--config", config], environment: ["BANK_SECRET": "x"])
                XCTAssertEqual(outcome.status, 2, "\(command) with \(why): \(outcome.err)")
                XCTAssertTrue(outcome.err.contains(path), "the message names the file: \(outcome.err)")
                XCTAssertTrue(outcome.err.contains("dpop"), outcome.err)
            }
        }
        let missing = try config(tokenURL: "http://127.0.0.1:9/token", backendPort: 9, dpop: "{keyFile: /nonexistent/dpop.pem}")
        let outcome = try runSidecar(["check", "--config", missing], environment: ["BANK_SECRET": "x"])
        XCTAssertEqual(outcome.status, 2)
        XCTAssertTrue(outcome.err.contains("/nonexistent/dpop.pem"), outcome.err)
    }

    func testTheKeyNeverAppearsOnlyItsThumbprint() throws {
        let policy: [String: Any] = ["client_id": "bank-client", "client_secret": "bank-secret-91", "require_dpop": true]
        let server = try FixtureServer(script: FixtureProcess.testsDirectory.appendingPathComponent("ProxyTests/Fixtures/dpop_server.py"),
                                       arguments: ["--dir", "{dir}"]) { try FixtureProcess.writeJSON(policy, to: "policy.json", in: $0) }
        let backendPort = try XCTUnwrap(Int(try String(contentsOf: server.file("backend_port"), encoding: .utf8)
            .trimmingCharacters(in: .whitespacesAndNewlines)))
        let pem = try Command.run(["openssl", "genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256"]).out
        let path = try keyFile(pem)
        let config = try config(tokenURL: "http://127.0.0.1:\(server.port)/token", backendPort: backendPort,
                                dpop: "{keyFile: \"\(path)\"}")
        let environment = ["BANK_SECRET": "bank-secret-91"]
        let check = try runSidecar(["check", "--config", config], environment: environment)
        XCTAssertEqual(check.status, 0, check.err)
        XCTAssertTrue(check.out.contains("dpop:") && check.out.contains("keyFile: \"\(path)\""), check.out)

        let sidecar = try CapturedSidecar(configPath: config, environment: environment)
        for index in 0..<3 {
            let client = try XCTUnwrap(SimpleClient(port: sidecar.port))
            client.send("POST /pay/\(index) HTTP/1.1\r\nHost: accounts.test\r\nContent-Length: 2\r\n\r\nok")
            XCTAssertEqual(client.response()?.status, 200)
        }
        var admin: [String: String] = [:]
        for target in ["/tokens", "/metrics", "/"] {
            let client = try XCTUnwrap(SimpleClient(port: sidecar.adminPort))
            client.send("GET \(target) HTTP/1.1\r\nHost: admin\r\n\r\n")
            admin[target] = client.response()?.body ?? ""
        }
        let logged = server.jsonLines("as_requests.jsonl")
        let jkt = try XCTUnwrap(logged.last?["jkt"] as? String)
        let tokens = try XCTUnwrap(admin["/tokens"])
        XCTAssertTrue(tokens.contains("\"tokenType\":\"DPoP\"") && tokens.contains("\"jkt\":\"\(jkt)\""), tokens)
        XCTAssertTrue(admin["/"]?.contains("DPoP · jkt \(jkt)") == true, "the status page shows the type and thumbprint")
        XCTAssertTrue(admin["/metrics"]?.contains("token_sidecar_dpop_nonce_retries_total{credential=\"bank\",server=\"resource\"} 0") == true,
                      admin["/metrics"] ?? "")
        // The key's base64 body, line by line, appears nowhere.
        let keyLines = pem.split(separator: "\n").filter { !$0.hasPrefix("-----") && $0.count > 16 }
        let everything = ([sidecar.text(), check.out, check.err] + admin.values).joined(separator: "\n")
        for line in keyLines { XCTAssertFalse(everything.contains(line), "the DPoP key leaked") }
        XCTAssertFalse(everything.contains("bank-secret-91"))
    }
}
