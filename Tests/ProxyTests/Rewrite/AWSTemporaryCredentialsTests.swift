import Foundation
import Synchronization
import TestSupport
import XCTest
@testable import Proxy

/// Temporary AWS credentials the sidecar fetches itself, against moto with IAM authentication on:
/// STS AssumeRoleWithWebIdentity with a projected token file (EKS IRSA), and a container
/// credentials endpoint with its authorization token file (EKS Pod Identity). The fixture says
/// the credentials expire after 6 s, so refreshes ahead of expiry happen within the test.
final class AWSTemporaryCredentialsTests: XCTestCase {
    private var directory: URL!
    private var moto: FixtureProcess!
    private var ca: TestCA!
    private var proxy: ProxyHarness!
    private static let lifetime = 6

    override func setUpWithError() throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("awstemp-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        ca = try TestCA()
        moto = try FixtureProcess(script: "ProxyTests/Fixtures/moto_server.py",
                                  arguments: ["{dir}", ca.localhostCert, ca.localhostKey, "--credentials-lifetime", String(Self.lifetime)],
                                  python: AWSPython.path)
    }

    override func tearDown() {
        proxy = nil
        moto = nil
        try? FileManager.default.removeItem(at: directory)
    }

    private var caFile: String { directory.appendingPathComponent("ca.crt").path }
    private func file(_ name: String) -> URL { directory.appendingPathComponent(name) }

    private func start(source: String) throws {
        proxy = try ProxyHarness(yaml: """
            listen: "127.0.0.1:0"
            timeouts: {connect: 5s, responseHeaders: 20s}
            intercept:
              caCertFile: \(caFile)
            credentials:
              aws:
                type: aws
                placeholderAccessKeyId: AKIDTOKENSIDECAR0001
                \(source)
            routes:
              - host: "*.amazonaws.com:443"
                intercept: true
                upstream: "https://localhost:\(moto.port)"
                caFile: \(ca.caCert)
                preserveHost: true
                credential: aws
                inject: {sigv4: {allowedRegions: [us-east-1], allowedServices: [sts, sqs]}}
            """)
    }

    /// STS GetCallerIdentity through the sidecar, signed by curl with the placeholder keys: the ARN moto names.
    private static func callerIdentity(proxyPort: Int, caFile: String) throws -> String? {
        let outcome = try Command.run(["curl", "-sS", "--proxy", "http://127.0.0.1:\(proxyPort)", "--cacert", caFile, "--http1.1",
                                       "--aws-sigv4", "aws:amz:us-east-1:sts", "--user", "AKIDTOKENSIDECAR0001:placeholder",
                                       "-d", "Action=GetCallerIdentity&Version=2011-06-15", "https://sts.us-east-1.amazonaws.com/"])
        guard let start = outcome.out.range(of: "<Arn>"), let end = outcome.out.range(of: "</Arn>") else { return nil }
        return String(outcome.out[start.upperBound..<end.lowerBound])
    }

    private func motoLog() -> [[String: Any]] {
        let text = (try? String(contentsOf: moto.file("log.jsonl"), encoding: .utf8)) ?? ""
        return text.split(separator: "\n").compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
    }

    /// Calls for `seconds` from `clients` threads at once (bounded: at most 400 calls each);
    /// every one must name `arn`. Returns how many were made.
    @discardableResult
    private func load(seconds: Double, clients: Int = 1, expecting arn: String, file: StaticString = #filePath, line: UInt = #line) throws -> Int {
        let deadline = Date().addingTimeInterval(seconds)
        let port = proxy.port, caFile = caFile
        let results = Mutex<(calls: Int, wrong: [String])>((0, []))
        DispatchQueue.concurrentPerform(iterations: clients) { _ in
            var calls = 0
            while Date() < deadline, calls < 400 {
                let named = (try? Self.callerIdentity(proxyPort: port, caFile: caFile)) ?? nil
                results.withLock {
                    $0.calls += 1
                    if named != arn { $0.wrong.append(named ?? "no answer") }
                }
                calls += 1
            }
        }
        let (calls, wrong) = results.withLock { $0 }
        XCTAssertEqual(wrong, [], "calls that did not name \(arn)", file: file, line: line)
        XCTAssertGreaterThanOrEqual(calls, 3, file: file, line: line)
        return calls
    }

    func testWebIdentityCredentialsAreFetchedOncePerLifetimeRefreshedAheadAndFollowTheTokenFile() throws {
        try "first-projected-token\n".write(to: file("token"), atomically: true, encoding: .utf8)
        let role = try String(contentsOf: moto.file("role.arn"), encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
        try start(source: """
            webIdentity: {roleArn: "\(role)", tokenFile: \(file("token").path), stsEndpoint: "https://localhost:\(moto.port)",
                              sessionName: fleet-app, caFile: \(ca.caCert)}
                refreshAt: 50%
            """)
        let assumed = "arn:aws:sts::123456789012:assumed-role/app-role/fleet-app"
        // Four clients at once: a refresh due while requests keep arriving is one STS call (single flight).
        let calls = try load(seconds: 8, clients: 4, expecting: assumed)
        var assumes = motoLog().filter { $0["webIdentity"] != nil }
        // 6 s credentials refreshed at half their life: about one STS call per 3 s of load, never one per request.
        XCTAssertTrue((2...5).contains(assumes.count), "STS calls in 8 s: \(assumes.count)")
        XCTAssertGreaterThan(calls, assumes.count * 4, "\(calls) calls made \(assumes.count) STS calls")
        // Ahead of expiry: each refresh came before the keys it replaced ran out (moto itself
        // keeps taking expired keys, so only the calls' times can show it).
        let times = assumes.compactMap { $0["time"] as? Double }
        XCTAssertEqual(times.count, assumes.count)
        for (earlier, later) in zip(times, times.dropFirst()) {
            XCTAssertLessThan(later - earlier, Double(Self.lifetime) - 0.5, "STS called again \(later - earlier) s after the last: past its keys' life")
        }
        XCTAssertTrue(assumes.allSatisfy { $0["status"] as? Int == 200 })
        let signed = motoLog().filter { $0["action"] as? String == "GetCallerIdentity" }
        XCTAssertTrue(signed.allSatisfy { ($0["signedWith"] as? String ?? "").hasPrefix("ASIA") && $0["securityToken"] as? Bool == true },
                      "signed with the temporary key and its session token")
        XCTAssertTrue(signed.allSatisfy { $0["placeholder"] as? Bool == false && $0["status"] as? Int == 200 })
        XCTAssertEqual(Set(assumes.compactMap { $0["webIdentity"] as? String }).count, 1)

        // The kubelet rotates the projected token: the next call uses the new one.
        try "second-projected-token\n".write(to: file("token"), atomically: true, encoding: .utf8)
        try load(seconds: 5, expecting: assumed)
        assumes = motoLog().filter { $0["webIdentity"] != nil }
        XCTAssertEqual(Set(assumes.compactMap { $0["webIdentity"] as? String }).count, 2, "the rotated token file was used")
    }

    func testContainerCredentialsAreFetchedWithTheAuthorizationTokenFile() throws {
        try "pod-identity-token-1\n".write(to: moto.file("container.token"), atomically: true, encoding: .utf8)
        try "pod-identity-token-1\n".write(to: file("container.token"), atomically: true, encoding: .utf8)
        try start(source: """
            containerCredentials: {uri: "https://localhost:\(moto.port)/v1/credentials", authorizationTokenFile: \(file("container.token").path),
                                       caFile: \(ca.caCert)}
            """)
        try load(seconds: 3, expecting: "arn:aws:iam::123456789012:user/app-user")
        let fetched = motoLog().filter { $0["container"] != nil }
        // Fetched at start, refreshed at 80 % (4.8 s): once, or twice on a slow machine.
        XCTAssertTrue((1...2).contains(fetched.count), "fetches: \(fetched.count)")
        XCTAssertTrue(fetched.allSatisfy { $0["status"] as? Int == 200 }, "the authorization token file was sent")
        let containerKey = try String(contentsOf: moto.file("container.id"), encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
        let signed = motoLog().filter { $0["action"] as? String == "GetCallerIdentity" }
        XCTAssertEqual(Set(signed.compactMap { $0["signedWith"] as? String }), [containerKey])
    }
}
