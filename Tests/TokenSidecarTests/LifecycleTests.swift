import Foundation
import XCTest

/// Signals and secret rotation on the real process.
final class LifecycleTests: XCTestCase {
    func testSIGTERMLetsTwoHundredSlowRequestsFinishThenExitsZero() throws {
        let backend = try FixtureServer.backend(log: "b.jsonl")
        let path = try writeConfig(staticRouteConfig(upstream: "http://127.0.0.1:\(backend.port)",
                                                 extra: ["drainTimeout: 20s", "accessLog: false"]))
        let sidecar = try SidecarProcess(configPath: path)
        var clients: [SimpleClient] = []
        for i in 0..<200 {
            let client = try XCTUnwrap(SimpleClient(port: sidecar.port, timeout: 30))
            client.send("GET /slow?ms=2000&i=\(i) HTTP/1.1\r\nHost: api.test\r\n\r\n")
            clients.append(client)
        }
        // Let every request reach the backend, then ask the sidecar to stop.
        let deadline = Date().addingTimeInterval(10)
        while backend.log("b.jsonl").filter({ $0["event"] as? String == "request" }).count < 200 && Date() < deadline {
            Thread.sleep(forTimeInterval: 0.05)
        }
        sidecar.signal(SIGTERM)
        Thread.sleep(forTimeInterval: 0.2)
        XCTAssertNil(SimpleClient(port: sidecar.port, timeout: 2), "a draining sidecar accepts no new connections")
        var ok = 0
        for client in clients {
            if let response = client.response(), response.status == 200 { ok += 1 }
        }
        XCTAssertEqual(ok, 200, "every request in flight completes")
        XCTAssertEqual(sidecar.waitForExit(timeout: 15), 0)
    }

    func testSIGHUPSwitchesCredentialUnderLoadWithoutFailures() throws {
        let backend = try FixtureServer.backend(log: "b.jsonl")
        func config(_ credential: String) -> String {
            """
            listen: "127.0.0.1:0"
            admin: "127.0.0.1:0"
            accessLog: false
            credentials:
              first: {type: static, token: "token-first"}
              second: {type: static, token: "token-second"}
            routes:
              - host: "api.test"
                upstream: "http://127.0.0.1:\(backend.port)"
                credential: \(credential)
            """
        }
        let path = try writeConfig(config("first"))
        let sidecar = try SidecarProcess(configPath: path)
        let client = try XCTUnwrap(SimpleClient(port: sidecar.port))
        var failures = 0
        var sent = 0
        let start = Date()
        var reloaded: Date?
        // Load for a fixed time on both sides of the reload (the count bound only guards the loop).
        while sent < 100_000 && (reloaded.map { Date().timeIntervalSince($0) < 2 } ?? true) {
            if reloaded == nil && (Date().timeIntervalSince(start) > 1 || sent > 2000) {
                try config("second").write(toFile: path, atomically: true, encoding: .utf8)
                sidecar.signal(SIGHUP)
                reloaded = Date()
            }
            client.send("GET /load/\(sent) HTTP/1.1\r\nHost: api.test\r\n\r\n")
            if client.response()?.status != 200 { failures += 1 }
            sent += 1
        }
        XCTAssertEqual(failures, 0, "no request fails across the reload (\(sent) sent)")
        let tokens = backend.log("b.jsonl").filter { $0["event"] as? String == "request" }.map { request -> String in
            let headers = request["headers"] as? [[String]] ?? []
            return headers.first { $0[0].lowercased() == "authorization" }?[1] ?? ""
        }
        XCTAssertEqual(tokens.first, "Bearer token-first")
        XCTAssertEqual(tokens.last, "Bearer token-second", "requests after the reload carry the new token")
        XCTAssertTrue(tokens.allSatisfy { $0 == "Bearer token-first" || $0 == "Bearer token-second" })
        sidecar.signal(SIGTERM)
        XCTAssertEqual(sidecar.waitForExit(timeout: 10), 0)
    }

    func testBadConfigOnSIGHUPKeepsTheRunningOne() throws {
        let backend = try FixtureServer.backend(log: "b.jsonl")
        let good = staticRouteConfig(upstream: "http://127.0.0.1:\(backend.port)")
        let path = try writeConfig(good)
        let sidecar = try SidecarProcess(configPath: path)
        try "routes: [ {host: }".write(toFile: path, atomically: true, encoding: .utf8)
        sidecar.signal(SIGHUP)
        Thread.sleep(forTimeInterval: 0.5)
        let client = try XCTUnwrap(SimpleClient(port: sidecar.port))
        client.send("GET /still HTTP/1.1\r\nHost: api.test\r\n\r\n")
        XCTAssertEqual(client.response()?.status, 200)
        sidecar.signal(SIGTERM)
        XCTAssertEqual(sidecar.waitForExit(timeout: 10), 0)
        XCTAssertTrue(sidecar.remainingLog().contains("reload refused"))
    }

    func testRotatingSecretFileBySymlinkSwapIsUsedByTheNextFetch() throws {
        let tokens = try FixtureServer.tokenServer(["expires_in": 2])
        // Kubernetes layout: secret -> ..data/secret, ..data -> ..2026_a (swapped atomically).
        let secrets = FileManager.default.temporaryDirectory.appendingPathComponent("secrets-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: secrets) }
        for (name, value) in [("..a", "secret-one"), ("..b", "secret-two")] {
            try FileManager.default.createDirectory(at: secrets.appendingPathComponent(name), withIntermediateDirectories: true)
            try value.write(to: secrets.appendingPathComponent("\(name)/secret"), atomically: true, encoding: .utf8)
        }
        try FileManager.default.createSymbolicLink(atPath: secrets.appendingPathComponent("..data").path, withDestinationPath: "..a")
        try FileManager.default.createSymbolicLink(atPath: secrets.appendingPathComponent("secret").path, withDestinationPath: "..data/secret")
        let path = try writeConfig("""
        listen: "127.0.0.1:0"
        admin: "127.0.0.1:0"
        credentials:
          partner:
            type: oauth2
            tokenUrl: "http://127.0.0.1:\(tokens.port)/token"
            clientId: "client"
            secretFile: "\(secrets.appendingPathComponent("secret").path)"
        routes:
          - host: "api.test"
            credential: partner
        """)
        let sidecar = try SidecarProcess(configPath: path)
        func basics() -> [String] {
            tokens.log("requests.jsonl").compactMap { request in
                (request["headers"] as? [[String]])?.first { $0[0].lowercased() == "authorization" }?[1]
            }
        }
        let first = "Basic " + Data("client:secret-one".utf8).base64EncodedString()
        let second = "Basic " + Data("client:secret-two".utf8).base64EncodedString()
        var deadline = Date().addingTimeInterval(10)
        while basics().isEmpty && Date() < deadline { Thread.sleep(forTimeInterval: 0.05) }
        XCTAssertEqual(basics().first, first)
        // Swap ..data to the new version the way the kubelet does: new link, then rename over.
        let swap = secrets.appendingPathComponent("..data_tmp").path
        try FileManager.default.createSymbolicLink(atPath: swap, withDestinationPath: "..b")
        XCTAssertEqual(rename(swap, secrets.appendingPathComponent("..data").path), 0)
        deadline = Date().addingTimeInterval(10)
        while !basics().contains(second) && Date() < deadline { Thread.sleep(forTimeInterval: 0.1) }
        XCTAssertTrue(basics().contains(second), "the next fetch uses the rotated secret, without a restart")
        XCTAssertEqual(sidecar.process.isRunning, true)
        sidecar.signal(SIGTERM)
        XCTAssertEqual(sidecar.waitForExit(timeout: 10), 0)
    }
}
