import Foundation
import XCTest

/// `token-sidecar token`, VCAP discovery as `check` shows it, and secrets kept out of output.
final class TokenCommandTests: XCTestCase {
    func testTokenCommandPrintsTheHeaderValue() throws {
        let server = try FixtureServer.tokenServer()
        let path = try writeConfig("""
        credentials:
          partner:
            type: oauth2
            tokenUrl: "http://127.0.0.1:\(server.port)/token"
            clientId: "c"
            secret: "s"
        """)
        let outcome = try runSidecar(["token", "--config", path])
        XCTAssertEqual(outcome.status, 0, outcome.err)
        XCTAssertEqual(outcome.out, "Bearer tok-1\n")
    }

    func testTokenCommandReportsTheTokenServersErrorAndExitsNonZero() throws {
        let server = try FixtureServer.tokenServer(["status": 401, "error": "invalid_client", "error_description": "bad secret"])
        let path = try writeConfig("""
        credentials:
          partner:
            type: oauth2
            tokenUrl: "http://127.0.0.1:\(server.port)/token"
            clientId: "c"
            secret: "SENTINEL-SECRET-T"
        """)
        let outcome = try runSidecar(["token", "--config", path, "--credential", "partner"])
        XCTAssertNotEqual(outcome.status, 0)
        XCTAssertEqual(outcome.out, "")
        XCTAssertTrue(outcome.err.contains("invalid_client"), outcome.err)
        XCTAssertFalse(outcome.err.contains("SENTINEL-SECRET-T"))
    }

    func testVCAPProvidesTheMCACredentialForCheckAndForTheProxy() throws {
        let server = try FixtureServer.tokenServer()
        let backend = try FixtureServer.backend(log: "backend.jsonl")
        let vcapServices = """
        {"AdvancedMobileAccess": [{"credentials": {"clientId": "vcap-client", "secret": "SENTINEL-VCAP-SECRET",
          "serverUrl": "http://127.0.0.1:\(server.port)/imf-authserver"}}]}
        """
        let vcapApplication = #"{"application_id": "vcap-app-id"}"#
        let environment = ["VCAP_SERVICES": vcapServices, "VCAP_APPLICATION": vcapApplication]
        let path = try writeConfig("""
        listen: "127.0.0.1:0"
        credentials:
          mca:
            type: mca
        routes:
          - host: "api.test"
            upstream: "http://127.0.0.1:\(backend.port)"
            credential: mca
        """)
        let check = try runSidecar(["check", "--config", path], environment: environment)
        XCTAssertEqual(check.status, 0, check.err)
        XCTAssertTrue(check.out.contains("vcap-client"), check.out)
        XCTAssertTrue(check.out.contains("VCAP_SERVICES"), check.out)
        XCTAssertTrue(check.out.contains("vcap-app-id"), check.out)
        XCTAssertFalse(check.out.contains("SENTINEL-VCAP-SECRET"))

        let token = try runSidecar(["token", "--config", path], environment: environment)
        XCTAssertEqual(token.out, "Bearer tok-1\n", token.err)
        let request = try XCTUnwrap(server.log("requests.jsonl").first)
        XCTAssertEqual(request["path"] as? String, "/imf-authserver/authorization/v1/apps/vcap-app-id/token")
    }

    func testDebugLogsNeverContainTheSecretOrTheToken() throws {
        let server = try FixtureServer.tokenServer(["token_prefix": "SENTINEL-TOKEN-"])
        let backend = try FixtureServer.backend(log: "backend.jsonl")
        let path = try writeConfig("""
        listen: "127.0.0.1:0"
        logLevel: debug
        credentials:
          partner:
            type: oauth2
            tokenUrl: "http://127.0.0.1:\(server.port)/token"
            clientId: "c"
            secretEnv: PARTNER_SECRET
        routes:
          - host: "api.test"
            upstream: "http://127.0.0.1:\(backend.port)"
            credential: partner
        """)
        let process = Process()
        process.executableURL = Self.sidecarBinary
        process.arguments = ["run", "--config", path, "--log-level", "debug"]
        process.environment = childEnvironment(["PARTNER_SECRET": "SENTINEL-SECRET-LOG"])
        let err = Pipe(), out = Pipe()
        process.standardError = err
        process.standardOutput = out
        try process.run()
        // Lines up to the one that announces the address. It is not always the first: the
        // credential's first token is fetched at start, and its "token fetched" line (from the
        // token manager's thread) can come before it.
        var first = Data()
        var address: String?
        while address == nil {
            var line = Data()
            while true {
                let byte = err.fileHandleForReading.readData(ofLength: 1)
                if byte.isEmpty || byte == Data([10]) { break }
                line.append(byte)
            }
            if line.isEmpty { break }  // the process ended without announcing
            first.append(line + Data([10]))
            let object = try? JSONSerialization.jsonObject(with: line) as? [String: Any]
            if object?["msg"] as? String == "listening" { address = object?["address"] as? String }
        }
        // (The lines themselves are not printed: they are what this test checks for secrets.)
        let proxyAddress = try XCTUnwrap(address, "no listening line among \(first.split(separator: 10).count) lines")
        for i in 0..<5 {
            let curl = Process()
            curl.executableURL = URL(fileURLWithPath: "/usr/bin/env")
            curl.arguments = ["curl", "-sS", "--max-time", "10", "-o", "/dev/null", "-x", "http://\(proxyAddress)", "http://api.test/x\(i)"]
            curl.environment = ["PATH": "/usr/bin:/bin"]
            try curl.run()
            curl.waitUntilExit()
        }
        process.terminate()
        process.waitUntilExit()
        let logs = String(decoding: first + err.fileHandleForReading.readDataToEndOfFile() + out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        XCTAssertEqual(backend.log("backend.jsonl").filter { $0["event"] as? String == "request" }.count, 5, "requests went through")
        XCTAssertTrue(logs.contains("\"level\":\"debug\"") || logs.contains("\"level\":\"info\""), logs)
        XCTAssertFalse(logs.contains("SENTINEL-SECRET-LOG"), "the secret leaked into the logs")
        XCTAssertFalse(logs.contains("SENTINEL-TOKEN-"), "the token leaked into the logs")
        for line in logs.split(separator: "\n") {
            XCTAssertNotNil(try? JSONSerialization.jsonObject(with: Data(line.utf8)), "not JSON: \(line)")
        }
    }
}
