import Foundation
import TestSupport
import XCTest

/// An `aws` credential is shown by `check`, the status page, `/tokens`, `/metrics` and the
/// `token` command without its secret key or session token.
final class AWSCredentialVisibilityTests: XCTestCase {
    func testNoKeySecretInAnyOutput() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("awsvis-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        addTeardownBlock { try? FileManager.default.removeItem(at: directory) }
        let files = ["id": "AKIAVISIBILITYKEY001", "secret": "SENTINEL-AWS-SECRET-KEY", "session": "SENTINEL-AWS-SESSION-TOKEN"]
        for (name, value) in files { try (value + "\n").write(to: directory.appendingPathComponent(name), atomically: true, encoding: .utf8) }
        let path = try writeConfig("""
        listen: "127.0.0.1:0"
        admin: "127.0.0.1:0"
        credentials:
          aws:
            type: aws
            placeholderAccessKeyId: AKIDTOKENSIDECAR0001
            accessKeyIdFile: \(directory.appendingPathComponent("id").path)
            secretAccessKeyFile: \(directory.appendingPathComponent("secret").path)
            sessionTokenFile: \(directory.appendingPathComponent("session").path)
        routes:
          - host: "*.amazonaws.com:443"
            upstream: "https://127.0.0.1:9"
            credential: aws
            inject: {sigv4: {allowedRegions: [us-east-1]}}
        """)
        let check = try runSidecar(["check", "--config", path])
        XCTAssertEqual(check.status, 0, check.err)
        XCTAssertTrue(check.out.contains("sigv4"), check.out)
        let token = try runSidecar(["token", "--config", path])
        XCTAssertNotEqual(token.status, 0, "no bearer token to print")
        let sidecar = try CapturedSidecar(configPath: path)
        let deadline = Date().addingTimeInterval(10)
        while Date() < deadline && (try? fetch(port: sidecar.adminPort, "/readyz"))?.status != 200 {
            Thread.sleep(forTimeInterval: 0.1)
        }
        var outputs = [check.out + check.err, token.out + token.err]
        for page in ["/", "/tokens", "/metrics"] {
            let answer = try fetch(port: sidecar.adminPort, page, headers: [("Accept", "application/json")])
            XCTAssertEqual(answer.status, 200, page)
            outputs.append(answer.text)
        }
        XCTAssertTrue(outputs[2].contains("aws"), "the status page names the credential")
        sidecar.stop()
        outputs.append(sidecar.text())
        for output in outputs {
            XCTAssertFalse(output.contains("SENTINEL"), "a secret key or session token in: \(output.prefix(300))")
        }
    }
}
