import Foundation
import XCTest

/// Reloading without a signal: a ConfigMap-style atomic swap of the config directory under load,
/// an invalid file that leaves the running configuration serving (and says why on the status
/// page and in metrics), and `POST /reload` on the admin listener.
final class ConfigReloadTests: XCTestCase {
    private func config(backend: Int, allow: String) -> String {
        """
        listen: "127.0.0.1:0"
        admin: "127.0.0.1:0"
        accessLog: false
        credentials:
          api: {type: static, token: "reload-token"}
        routes:
          - host: "api.test"
            upstream: "http://127.0.0.1:\(backend)"
            credential: api
            rules:
              - {name: allowed, methods: [GET], paths: ["\(allow)"]}
        """
    }

    /// Lays `text` out as kubelet does a ConfigMap: `DIR/..TIMESTAMP/config.yaml`, `DIR/..data` a
    /// symlink to it swapped by a rename, `DIR/config.yaml` a symlink through `..data`.
    private func publish(_ text: String, in dir: URL, version: Int) throws {
        let fm = FileManager.default
        let versioned = dir.appendingPathComponent("..2026_11_28_\(version)")
        try fm.createDirectory(at: versioned, withIntermediateDirectories: true)
        try text.write(to: versioned.appendingPathComponent("config.yaml"), atomically: true, encoding: .utf8)
        let temporary = dir.appendingPathComponent("..data_tmp").path
        try? fm.removeItem(atPath: temporary)
        try fm.createSymbolicLink(atPath: temporary, withDestinationPath: versioned.lastPathComponent)
        XCTAssertEqual(rename(temporary, dir.appendingPathComponent("..data").path), 0, "the atomic swap")
        if !fm.fileExists(atPath: dir.appendingPathComponent("config.yaml").path) {
            try fm.createSymbolicLink(atPath: dir.appendingPathComponent("config.yaml").path, withDestinationPath: "..data/config.yaml")
        }
    }

    private func admin(_ port: Int, _ method: String, _ path: String, accept: String = "application/json") -> (status: Int, body: String)? {
        guard let client = SimpleClient(port: port) else { return nil }
        client.send("\(method) \(path) HTTP/1.1\r\nHost: admin\r\nAccept: \(accept)\r\nContent-Length: 0\r\n\r\n")
        return client.response().map { ($0.status, $0.body) }
    }

    private func status(of port: Int, _ path: String) -> Int {
        guard let client = SimpleClient(port: port) else { return 0 }
        client.send("GET \(path) HTTP/1.1\r\nHost: api.test\r\n\r\n")
        return client.response()?.status ?? 0
    }

    func testAConfigMapSwapUnderLoadAppliesNewRulesWithoutAFailedRequest() throws {
        let backend = try FixtureServer.backend()
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("configmap-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: dir) }
        try publish(config(backend: backend.port, allow: "/v1/**"), in: dir, version: 1)
        let sidecar = try CapturedSidecar(configPath: dir.appendingPathComponent("config.yaml").path)
        XCTAssertEqual(status(of: sidecar.port, "/v1/x"), 200)
        XCTAssertEqual(status(of: sidecar.port, "/v2/x"), 403)

        // Load on the path the new rules refuse: 200 before the swap, 403 after, nothing else.
        let load = FleetLoad()
        let port = sidecar.port
        let done = DispatchSemaphore(value: 0)
        DispatchQueue.global().async {
            load.run(ports: { [port] }, threads: 4, seconds: 5, maxRequests: 40_000, path: "/v1/load-")
            done.signal()
        }
        Thread.sleep(forTimeInterval: 1.5)
        try publish(config(backend: backend.port, allow: "/v2/**"), in: dir, version: 2)
        let swapped = Date()
        var inForce: Double?
        while Date().timeIntervalSince(swapped) < 5 {
            if status(of: sidecar.port, "/v2/x") == 200 { inForce = Date().timeIntervalSince(swapped); break }
            Thread.sleep(forTimeInterval: 0.05)
        }
        XCTAssertEqual(done.wait(timeout: .now() + 20), .success)
        let samples = load.recorded
        let seconds = (samples.map(\.time).max() ?? 0) - (samples.map(\.time).min() ?? 0)
        print("config swap under load: \(samples.count) requests in \(String(format: "%.1f", seconds)) s, new rules in force after \(inForce.map { String(format: "%.2f", $0) } ?? "never") s")
        XCTAssertEqual(samples.filter { $0.status != 200 && $0.status != 403 }.map(\.status), [], "no failed request")
        XCTAssertGreaterThan(samples.filter { $0.status == 200 }.count, 0)
        XCTAssertGreaterThan(samples.filter { $0.status == 403 }.count, 0, "the new rules refused the old path")
        XCTAssertLessThan(try XCTUnwrap(inForce, "the new rules came into force"), 2, "within 2 s of the swap")

        // An invalid file: refused, the running rules stay, the status page and a metric say why.
        try publish("listen: \"127.0.0.1:0\"\nroutes:\n  - host: api.test\n    rules: 7\n", in: dir, version: 3)
        var lastError: String?
        let deadline = Date().addingTimeInterval(5)
        while lastError == nil && Date() < deadline {
            Thread.sleep(forTimeInterval: 0.1)
            let page = admin(sidecar.adminPort, "GET", "/").flatMap { try? JSONSerialization.jsonObject(with: Data($0.body.utf8)) as? [String: Any] }
            lastError = (page?["configuration"] as? [String: Any])?["lastError"] as? String
        }
        XCTAssertTrue(lastError?.contains("config.yaml: routes[0]") == true, "the status page names the file and key: \(lastError ?? "nil")")
        XCTAssertEqual(status(of: sidecar.port, "/v2/x"), 200, "the previous configuration keeps serving")
        let metrics = admin(sidecar.adminPort, "GET", "/metrics")?.body ?? ""
        XCTAssertTrue(metrics.contains("token_sidecar_config_last_reload_successful 0"), metrics)
        XCTAssertTrue(metrics.contains("token_sidecar_config_reloads_total{result=\"refused\"} 1"), metrics)
        XCTAssertTrue(metrics.contains("token_sidecar_config_reloads_total{result=\"applied\"} 1"), metrics)
        let html = admin(sidecar.adminPort, "GET", "/", accept: "text/html")?.body ?? ""
        XCTAssertTrue(html.contains("<h2>Configuration</h2>") && html.contains("routes[0]"), "the HTML page shows it too")

        // POST /reload: refused while the file is bad (400), applied once fixed (200).
        let refused = admin(sidecar.adminPort, "POST", "/reload")
        XCTAssertEqual(refused?.status, 400)
        XCTAssertTrue(refused?.body.contains("\"status\":\"refused\"") == true, refused?.body ?? "")
        XCTAssertEqual(admin(sidecar.adminPort, "GET", "/reload")?.status, 405)
        // Written in place this time (not a swap): the watch and the POST both see it.
        let fixed = dir.appendingPathComponent("..2026_11_28_3/config.yaml")
        try config(backend: backend.port, allow: "/v3/**").write(to: fixed, atomically: true, encoding: .utf8)
        let applied = admin(sidecar.adminPort, "POST", "/reload")
        XCTAssertEqual(applied?.status, 200)
        XCTAssertTrue(applied?.body.contains("\"status\":\"reloaded\"") == true && applied?.body.contains("\"lastError\":null") == true,
                      applied?.body ?? "")
        XCTAssertEqual(status(of: sidecar.port, "/v3/x"), 200)
        XCTAssertFalse(sidecar.text().contains("reload-token"), "never the token in a log")
        sidecar.stop()
    }
}
