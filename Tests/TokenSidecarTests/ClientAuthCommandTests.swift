import Foundation
import XCTest

/// Every client-authentication flow through the binary: `check` renders it without secrets,
/// `token` fetches with it from a verifying authorization server, and a running sidecar never
/// writes a secret, a key or an assertion anywhere (logs, `/tokens`, `/readyz`, `check`).
final class ClientAuthCommandTests: XCTestCase {
    private var directory: URL!

    override func setUpWithError() throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("clientauth-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    }

    override func tearDown() { try? FileManager.default.removeItem(at: directory) }

    private func path(_ name: String) -> String { directory.appendingPathComponent(name).path }
    private func text(_ name: String) throws -> String { try String(contentsOfFile: path(name), encoding: .utf8) }

    private func openssl(_ arguments: [String], input: Data? = nil) throws -> Data {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["openssl"] + arguments
        let out = Pipe()
        process.standardOutput = out
        process.standardError = FileHandle.nullDevice
        let stdin = Pipe()
        process.standardInput = stdin
        try process.run()
        if let input { stdin.fileHandleForWriting.write(input) }
        try stdin.fileHandleForWriting.close()
        let data = out.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else { throw CocoaError(.executableLoad, userInfo: [NSLocalizedDescriptionKey: "openssl \(arguments)"]) }
        return data
    }

    /// Keys and certificates: `client` (RSA) and its `.pub`; a CA; `localhost` server cert;
    /// `mtls` (EC, CN mtls-client) and `mca` (RSA, CN mca-client) client certificates; `issuer` (RSA).
    private func makeMaterial() throws {
        for name in ["client", "issuer"] {
            _ = try openssl(["genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048", "-out", path("\(name).key")])
            _ = try openssl(["pkey", "-in", path("\(name).key"), "-pubout", "-out", path("\(name).pub")])
        }
        _ = try openssl(["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-keyout", path("ca.key"),
                         "-out", path("ca.pem"), "-days", "1", "-subj", "/CN=test CA", "-addext", "basicConstraints=critical,CA:TRUE",
                         "-addext", "keyUsage=critical,keyCertSign"])
        for (name, cn, key, usage, san) in [("localhost", "localhost", "ec", "serverAuth", "subjectAltName=DNS:localhost,IP:127.0.0.1"),
                                            ("mtls", "mtls-client", "ec", "clientAuth", ""), ("mca", "mca-client", "rsa", "clientAuth", "")] {
            try "basicConstraints=critical,CA:FALSE\nextendedKeyUsage=\(usage)\n\(san)\n".write(toFile: path("\(name).ext"), atomically: true, encoding: .utf8)
            let newKey = key == "rsa" ? ["-newkey", "rsa:2048"] : ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1"]
            _ = try openssl(["req", "-new"] + newKey + ["-nodes", "-keyout", path("\(name).key"), "-out", path("\(name).csr"), "-subj", "/CN=\(cn)"])
            _ = try openssl(["x509", "-req", "-in", path("\(name).csr"), "-CA", path("ca.pem"), "-CAkey", path("ca.key"), "-set_serial", "7",
                             "-days", "1", "-extfile", path("\(name).ext"), "-out", path("\(name).pem")])
        }
    }

    private static func base64URL(_ data: Data) -> String {
        data.base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }

    /// An RS256 JWT signed by `issuer.key` with the openssl CLI (a stand-in for Kubernetes).
    private func serviceAccountToken(expiresIn: Int) throws -> String {
        let now = Int(Date().timeIntervalSince1970)
        let header = Self.base64URL(try JSONSerialization.data(withJSONObject: ["alg": "RS256", "typ": "JWT"]))
        let claims = Self.base64URL(try JSONSerialization.data(withJSONObject: [
            "iss": "https://kubernetes.default.svc", "sub": "system:serviceaccount:ns:app", "aud": "sts.test",
            "iat": now, "exp": now + expiresIn,
        ]))
        let signature = try openssl(["dgst", "-sha256", "-sign", path("issuer.key")], input: Data("\(header).\(claims)".utf8))
        return "\(header).\(claims).\(Self.base64URL(signature))"
    }

    private func authServer(_ policy: [String: Any], tls: Bool = false) throws -> FixtureServer {
        var arguments = ["--log", "{dir}/requests.jsonl", "--policy", "{dir}/policy.json"]
        if tls { arguments += ["--tls-cert", path("localhost.pem"), "--tls-key", path("localhost.key"), "--client-ca", path("ca.pem")] }
        let server = try FixtureServer(script: "ProxyTests/Fixtures/client_auth_server.py", arguments: arguments)
        try server.writeJSON(policy, to: "policy.json")
        return server
    }

    /// One line of a PEM body: if it shows up in output, key material leaked.
    private func keyLine(_ name: String) throws -> String {
        try text(name).split(separator: "\n").dropFirst().first.map(String.init) ?? "?"
    }

    private struct Flow {
        let name: String
        let auth: String
        let server: FixtureServer
        let yaml: String
    }

    private func flows() throws -> [Flow] {
        try makeMaterial()
        try serviceAccountToken(expiresIn: 3600).write(toFile: path("sa-token"), atomically: true, encoding: .utf8)
        let jwt = try authServer(["method": "private_key_jwt", "client_id": "svc", "public_key": path("client.pub"), "audience": "aud.test"])
        let hmac = try authServer(["method": "client_secret_jwt", "client_id": "svc", "secret": "SENTINEL-JWT-SECRET-000000000000",
                                   "audience": "aud.test"])
        let file = try authServer(["method": "assertion_file", "client_id": "app", "public_key": path("issuer.pub"), "audience": "sts.test"])
        let mtls = try authServer(["method": "tls_client_auth", "client_id": "mtls-client", "subject_cn": "mtls-client"], tls: true)
        let mca = try authServer(["method": "mca_certificate", "client_id": "mca-client", "trusted_ca": path("ca.pem"),
                                  "mca_path": "/imf/authorization/v1/apps/t1/token"])
        return [
            Flow(name: "jwt", auth: "private_key_jwt", server: jwt, yaml: """
                type: oauth2
                tokenUrl: "http://127.0.0.1:\(jwt.port)/token"
                clientId: svc
                auth: private_key_jwt
                signingKeyFile: "\(path("client.key"))"
                assertionAudience: aud.test
            """),
            Flow(name: "hmac", auth: "client_secret_jwt", server: hmac, yaml: """
                type: oauth2
                tokenUrl: "http://127.0.0.1:\(hmac.port)/token"
                clientId: svc
                auth: client_secret_jwt
                secret: SENTINEL-JWT-SECRET-000000000000
                assertionAudience: aud.test
            """),
            Flow(name: "file", auth: "assertion_file", server: file, yaml: """
                type: oauth2
                tokenUrl: "http://127.0.0.1:\(file.port)/token"
                clientId: app
                auth: assertion_file
                assertionFile: "\(path("sa-token"))"
            """),
            Flow(name: "mtls", auth: "tls_client_auth", server: mtls, yaml: """
                type: oauth2
                tokenUrl: "https://localhost:\(mtls.port)/token"
                clientId: mtls-client
                auth: tls_client_auth
                caFile: "\(path("ca.pem"))"
                clientCert: "\(path("mtls.pem"))"
                clientKey: "\(path("mtls.key"))"
            """),
            Flow(name: "mca", auth: "certificate", server: mca, yaml: """
                type: mca
                serverUrl: "http://127.0.0.1:\(mca.port)/imf"
                tenantId: t1
                auth: certificate
                clientCert: "\(path("mca.pem"))"
                clientKey: "\(path("mca.key"))"
            """),
        ]
    }

    private func assertNothingSecret(in output: String, _ what: String, file: StaticString = #filePath, line: UInt = #line) throws {
        XCTAssertFalse(output.contains("SENTINEL"), "a secret in \(what)", file: file, line: line)
        XCTAssertFalse(output.contains("PRIVATE KEY"), "key material in \(what)", file: file, line: line)
        for key in ["client.key", "mtls.key", "mca.key"] {
            XCTAssertFalse(output.contains(try keyLine(key)), "\(key) in \(what)", file: file, line: line)
        }
        XCTAssertFalse(output.contains(try text("sa-token").prefix(60)), "the assertion in \(what)", file: file, line: line)
    }

    func testEveryFlowFetchesWithTheTokenCommandAndCheckShowsItWithoutSecrets() throws {
        let flows = try flows()
        let config = "credentials:\n" + flows.map { "  \($0.name):\n" + $0.yaml.split(separator: "\n").map { "  " + $0 }.joined(separator: "\n") }
            .joined(separator: "\n") + "\n"
        let path = try writeConfig(config)
        let check = try runSidecar(["check", "--config", path])
        XCTAssertEqual(check.status, 0, check.err)
        for flow in flows { XCTAssertTrue(check.out.contains("auth: \(flow.auth)"), "\(flow.auth) in \(check.out)") }
        try assertNothingSecret(in: check.out + check.err, "check")

        for flow in flows {
            let outcome = try runSidecar(["token", "--config", path, "--credential", flow.name])
            XCTAssertEqual(outcome.status, 0, "\(flow.name): \(outcome.err)")
            XCTAssertEqual(outcome.out, "Bearer tok-1\n", flow.name)
            XCTAssertEqual(flow.server.log("requests.jsonl").map { $0["verdict"] as? String }, ["ok"], flow.name)
            try assertNothingSecret(in: outcome.out + outcome.err, "token \(flow.name)")
        }
    }

    func testTheTokenCommandSaysWhyAnExpiredAssertionFileWasNotSent() throws {
        _ = try flows()
        try serviceAccountToken(expiresIn: -60).write(toFile: path("sa-token"), atomically: true, encoding: .utf8)
        let server = try authServer(["method": "assertion_file", "client_id": "app", "public_key": path("issuer.pub")])
        let config = try writeConfig("""
        credentials:
          file:
            type: oauth2
            tokenUrl: "http://127.0.0.1:\(server.port)/token"
            clientId: app
            auth: assertion_file
            assertionFile: "\(path("sa-token"))"
        """)
        let outcome = try runSidecar(["token", "--config", config])
        XCTAssertEqual(outcome.status, 1)
        XCTAssertTrue(outcome.err.contains("assertionFile \(path("sa-token")): expired"), outcome.err)
        XCTAssertEqual(server.log("requests.jsonl").count, 0)
        try assertNothingSecret(in: outcome.out + outcome.err, "token")
    }

    func testARunningSidecarNeverWritesASecretAKeyOrAnAssertion() throws {
        let flows = try flows()
        // One more credential whose assertion is expired: the failure path must not leak either.
        try serviceAccountToken(expiresIn: -60).write(toFile: path("expired-token"), atomically: true, encoding: .utf8)
        let expiredText = try text("expired-token")
        let credentials = flows.map { "  \($0.name):\n" + $0.yaml.split(separator: "\n").map { "  " + $0 }.joined(separator: "\n") }
        let config = try writeConfig("""
        listen: "127.0.0.1:0"
        admin: "127.0.0.1:0"
        logLevel: debug
        credentials:
        \(credentials.joined(separator: "\n"))
          stale:
            type: oauth2
            tokenUrl: "http://127.0.0.1:\(flows[2].server.port)/token"
            clientId: app
            auth: assertion_file
            assertionFile: "\(path("expired-token"))"
        routes: []
        """)
        let sidecar = try CapturedSidecar(configPath: config)
        let deadline = Date().addingTimeInterval(15)
        while Date() < deadline && flows.contains(where: { $0.server.log("requests.jsonl").isEmpty }) {
            Thread.sleep(forTimeInterval: 0.1)
        }
        Thread.sleep(forTimeInterval: 0.5)
        var admin = ""
        for target in ["/tokens", "/readyz", "/metrics"] {
            let client = try XCTUnwrap(SimpleClient(port: sidecar.adminPort))
            client.send("GET \(target) HTTP/1.1\r\nHost: admin\r\n\r\n")
            admin += client.response()?.body ?? ""
        }
        XCTAssertTrue(admin.contains("expired-token"), "the stale credential's error names its file")
        let logs = sidecar.text()
        for flow in flows {
            XCTAssertEqual(flow.server.log("requests.jsonl").first?["verdict"] as? String, "ok", flow.name)
            for request in flow.server.log("requests.jsonl") {
                for secret in [(request["form"] as? [String: String])?["client_assertion"]].compactMap({ $0 }) {
                    XCTAssertFalse(logs.contains(secret) || admin.contains(secret), "a signed assertion leaked (\(flow.name))")
                }
            }
        }
        try assertNothingSecret(in: logs, "logs")
        try assertNothingSecret(in: admin, "admin endpoints")
        XCTAssertFalse(logs.contains(expiredText.prefix(60)) || admin.contains(expiredText.prefix(60)))
    }
}
