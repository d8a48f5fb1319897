import Foundation
import TestSupport
import XCTest

/// An `aws` credential is shown by `check`, the status page, `/tokens`, `/metrics` and the
/// `token` command without its secret key or session token.
final class AWSCredentialVisibilityTests: XCTestCase {
    /// A directory removed when the test ends.
    private func temporaryDirectory() throws -> URL {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("awsvis-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        addTeardownBlock { try? FileManager.default.removeItem(at: directory) }
        return directory
    }

    /// A configuration with the `aws` credential whose source is `source` and one sigv4 route.
    private func configuration(source: String, host: String, upstream: String, services: String = "") throws -> String {
        try writeConfig("""
        listen: "127.0.0.1:0"
        admin: "127.0.0.1:0"
        credentials:
          aws:
            type: aws
            placeholderAccessKeyId: AKIDTOKENSIDECAR0001
            \(source)
        routes:
          - host: "\(host)"
            upstream: "\(upstream)"
            credential: aws
            inject: {sigv4: {allowedRegions: [us-east-1]\(services)}}
        """)
    }

    /// Once the sidecar is ready: the status page, `/tokens` and `/metrics` (JSON where offered).
    private func adminPages(_ sidecar: CapturedSidecar) throws -> [String] {
        let deadline = Date().addingTimeInterval(10)
        while Date() < deadline && (try? fetch(port: sidecar.adminPort, "/readyz"))?.status != 200 {
            Thread.sleep(forTimeInterval: 0.1)
        }
        return try ["/", "/tokens", "/metrics"].map { page in
            let answer = try fetch(port: sidecar.adminPort, page, headers: [("Accept", "application/json")])
            XCTAssertEqual(answer.status, 200, page)
            return answer.text
        }
    }

    func testNoKeySecretInAnyOutput() throws {
        let directory = try temporaryDirectory()
        let files = ["id": "AKIAVISIBILITYKEY001", "secret": "SENTINEL-AWS-SECRET-KEY", "session": "SENTINEL-AWS-SESSION-TOKEN"]
        for (name, value) in files { try (value + "\n").write(to: directory.appendingPathComponent(name), atomically: true, encoding: .utf8) }
        let path = try configuration(source: """
            accessKeyIdFile: \(directory.appendingPathComponent("id").path)
                secretAccessKeyFile: \(directory.appendingPathComponent("secret").path)
                sessionTokenFile: \(directory.appendingPathComponent("session").path)
            """, host: "*.amazonaws.com:443", upstream: "https://127.0.0.1:9")
        let check = try runSidecar(["check", "--config", path])
        XCTAssertEqual(check.status, 0, check.err)
        XCTAssertTrue(check.out.contains("sigv4"), check.out)
        let token = try runSidecar(["token", "--config", path])
        XCTAssertNotEqual(token.status, 0, "no bearer token to print")
        let sidecar = try CapturedSidecar(configPath: path)
        var outputs = [check.out + check.err, token.out + token.err] + (try adminPages(sidecar))
        XCTAssertTrue(outputs[2].contains("aws"), "the status page names the credential")
        sidecar.stop()
        outputs.append(sidecar.text())
        for output in outputs {
            XCTAssertFalse(output.contains("SENTINEL"), "a secret key or session token in: \(output.prefix(300))")
        }
    }

    /// Temporary keys from STS (web identity, the token server standing in), with tracing on:
    /// a request re-signed with them leaves neither their secret nor their session token in the
    /// exported spans (the request's and the STS call's), `/tokens`, `/metrics`, the status page
    /// or the log; the upstream gets the session token, as AWS must.
    func testTemporaryKeysStayOutOfTracesAndEveryOtherOutput() throws {
        let directory = try temporaryDirectory()
        try "projected-token\n".write(to: directory.appendingPathComponent("token"), atomically: true, encoding: .utf8)
        // The stand-in STS issues key ASIATSPVIS<n>, secret ASIATSPVIS<n>-secret, session token ASIATSPVIS<n>-session.
        let sts = try FixtureServer.tokenServer(["token_prefix": "ASIATSPVIS"])
        let backend = try FixtureServer.backend(log: "b.jsonl")
        let receiver = try FixtureProcess(script: "ProxyTests/Fixtures/otlp_receiver.py", arguments: ["--dir", "{dir}"], python: OTelPython.path)
        let path = try configuration(source: """
            webIdentity: {roleArn: "arn:aws:iam::123456789012:role/app", tokenFile: \(directory.appendingPathComponent("token").path),
                              stsEndpoint: "http://127.0.0.1:\(sts.port)/"}
            """, host: "sts.us-east-1.amazonaws.com", upstream: "http://127.0.0.1:\(backend.port)", services: ", allowedServices: [sts]")
        let sidecar = try CapturedSidecar(configPath: path, environment: [
            "OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:\(receiver.port)", "OTEL_BSP_SCHEDULE_DELAY": "100"])
        let pages = try adminPages(sidecar)
        let call = try Command.run(["curl", "-sS", "-o", "/dev/null", "-w", "%{http_code}", "--proxy", "http://127.0.0.1:\(sidecar.port)",
                                    "--aws-sigv4", "aws:amz:us-east-1:sts", "--user", "AKIDTOKENSIDECAR0001:placeholder",
                                    "-d", "Action=GetCallerIdentity&Version=2011-06-15", "http://sts.us-east-1.amazonaws.com/"])
        XCTAssertEqual(call.out, "200", call.err)
        let received = backend.log("b.jsonl").filter { $0["event"] as? String == "request" }
        let headers = (received.last?["headers"] as? [[String]]) ?? []
        XCTAssertTrue(headers.contains { $0.first?.lowercased() == "x-amz-security-token" && $0.last == "ASIATSPVIS1-session" },
                      "the upstream gets the session token: \(headers.map { $0.first ?? "" })")
        XCTAssertTrue(headers.contains { $0.first?.lowercased() == "authorization" && ($0.last ?? "").contains("Credential=ASIATSPVIS1/") })

        // Both spans exported: the request's and the STS call's.
        var spans: [[String: Any]] = []
        let spansDeadline = Date().addingTimeInterval(15)
        while spans.count < 2 && Date() < spansDeadline {
            Thread.sleep(forTimeInterval: 0.1)
            spans = receiver.jsonLines("spans.jsonl")
        }
        XCTAssertGreaterThanOrEqual(spans.count, 2, "the request's span and the STS call's")
        var outputs = [String(decoding: try JSONSerialization.data(withJSONObject: spans), as: UTF8.self)] + pages
            + (try adminPages(sidecar))
        sidecar.stop()
        outputs.append(sidecar.text())
        for output in outputs {
            XCTAssertFalse(output.contains("-secret") || output.contains("-session"), "a temporary secret or session token in: \(output.prefix(300))")
            XCTAssertFalse(output.contains("projected-token"), "the web identity token in: \(output.prefix(300))")
        }
    }
}
