import Foundation
import TestSupport
import XCTest

/// boto3, unchanged, finding its credentials at the sidecar's AWS container credentials endpoint
/// (`AWS_CONTAINER_CREDENTIALS_FULL_URI` + `AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE`, as on EKS Pod
/// Identity): it gets the placeholder key id, signs with it, and the sidecar's `sigv4` route
/// re-signs with the real keys, which moto (a real SigV4 verifier) accepts.
final class CredentialEndpointsAWSTests: XCTestCase {
    func testBoto3GetsThePlaceholderKeysAndItsRequestsAreReSigned() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("endpoints-aws-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let ca = try TestCA()
        let moto = try FixtureProcess(script: "ProxyTests/Fixtures/moto_server.py", arguments: ["{dir}", ca.localhostCert, ca.localhostKey],
                                      python: AWSPython.path)
        let tokenFile = directory.appendingPathComponent("aws-auth")
        // As EKS writes it: no trailing newline (botocore refuses one; the sidecar ignores one).
        try "pod-identity-token-0001".write(to: tokenFile, atomically: true, encoding: .utf8)
        let caFile = directory.appendingPathComponent("ca.crt").path
        let config = try writeConfig("""
            listen: "127.0.0.1:0"
            admin: "127.0.0.1:0"
            timeouts: {connect: 5s, responseHeaders: 20s}
            intercept: {caCertFile: \(caFile)}
            credentials:
              aws: {type: aws, placeholderAccessKeyId: AKIDTOKENSIDECAR0001,
                    accessKeyIdFile: \(moto.file("real.id").path), secretAccessKeyFile: \(moto.file("real.secret").path)}
            routes:
              - host: "*.amazonaws.com:443"
                intercept: true
                upstream: "https://localhost:\(moto.port)"
                caFile: \(ca.caCert)
                preserveHost: true
                credential: aws
                inject: {sigv4: {allowedRegions: [us-east-1], allowedServices: [sts]}}
            credentialEndpoints:
              listen: "127.0.0.1:0"
              aws: {credential: aws, authorizationTokenFile: \(tokenFile.path)}
            """)
        let sidecar = try CapturedSidecar(configPath: config)
        let endpoints = sidecar.credentialEndpointsPort()
        let proxyURL = "http://127.0.0.1:\(sidecar.port)"
        let outcome = try Command.run([AWSPython.path, FixtureProcess.testsDirectory.appendingPathComponent("ProxyTests/Fixtures/aws_app.py").path, "sts"],
                                      environment: [
                                        "HTTPS_PROXY": proxyURL, "NO_PROXY": "", "no_proxy": "", "AWS_CA_BUNDLE": caFile,
                                        "AWS_CONFIG_FILE": "/dev/null", "AWS_SHARED_CREDENTIALS_FILE": "/dev/null", "AWS_EC2_METADATA_DISABLED": "true",
                                        "HOME": directory.path,
                                        "AWS_CONTAINER_CREDENTIALS_FULL_URI": "http://127.0.0.1:\(endpoints)/aws/credentials",
                                        "AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE": tokenFile.path,
                                      ], timeout: 60)
        XCTAssertEqual(outcome.status, 0, outcome.err.suffix(1500) + "\n" + sidecar.text().suffix(1500))
        let result = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(outcome.out.utf8)) as? [String: Any])
        XCTAssertEqual(result["held"] as? String, "AKIDTOKENSIDECAR0001", "the app only ever held the placeholder key id")
        XCTAssertTrue((result["arn"] as? String)?.hasSuffix(":user/app-user") ?? false, "\(result)")
        let realKey = try String(contentsOf: moto.file("real.id"), encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
        let log = ((try? String(contentsOf: moto.file("log.jsonl"), encoding: .utf8)) ?? "").split(separator: "\n")
            .compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
        XCTAssertEqual(Set(log.compactMap { $0["signedWith"] as? String }), [realKey], "moto verified the real key's signature")
        XCTAssertEqual(log.filter { $0["placeholder"] as? Bool == true }.count, 0)

        // Without the authorization token: refused.
        let client = try XCTUnwrap(SimpleClient(port: endpoints))
        client.send("GET /aws/credentials HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: wrong\r\n\r\n")
        XCTAssertEqual(client.response()?.status, 401)
        let secret = try String(contentsOf: moto.file("real.secret"), encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
        XCTAssertFalse(sidecar.text().contains(secret))
        XCTAssertFalse(sidecar.text().contains("pod-identity-token-0001"))
    }
}
