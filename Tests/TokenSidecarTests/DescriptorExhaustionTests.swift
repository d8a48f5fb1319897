import Foundation
import XCTest

/// Issue 10: more clients than descriptors must not make the process spin or flood its output.
final class DescriptorExhaustionTests: XCTestCase {
    private var backend: FixtureServer!

    override func setUpWithError() throws {
        backend = try FixtureServer.backend()
    }

    override func tearDown() {
        backend = nil
    }

    private func config(_ extra: String = "") throws -> String {
        try writeConfig(staticRouteConfig(upstream: "http://127.0.0.1:\(backend.port)",
                                                 extra: ["workers: 1", "accessLog: false", extra]))
    }

    /// Sends a request on `client` and checks the backend's answer came back with the token.
    private func assertServed(_ client: SimpleClient, _ target: String, _ message: String,
                              file: StaticString = #filePath, line: UInt = #line) {
        client.send("GET \(target) HTTP/1.1\r\nHost: api.test\r\n\r\n")
        guard let response = client.response() else { return XCTFail("no response: \(message)", file: file, line: line) }
        XCTAssertEqual(response.status, 200, message, file: file, line: line)
        XCTAssertTrue(response.body.contains(target), "\(message): \(response.body.prefix(300))", file: file, line: line)
        XCTAssertTrue(response.body.contains("Bearer abc"), "\(message): \(response.body.prefix(300))", file: file, line: line)
    }

    /// Opens `count` connections (each completes in the kernel's backlog whether accepted or not).
    private func openClients(_ count: Int, port: Int) throws -> [SimpleClient] {
        var clients: [SimpleClient] = []
        for _ in 0..<count { clients.append(try XCTUnwrap(SimpleClient(port: port, timeout: 5))) }
        return clients
    }

    /// Watches the process for `seconds` with `clients` open and checks it is not spinning or
    /// flooding its output, and that everything it wrote is JSON.
    private func assertQuiet(_ sidecar: CapturedSidecar, for seconds: Double) throws {
        let startCPU = try XCTUnwrap(sidecar.cpuSeconds())
        let start = Date()
        Thread.sleep(forTimeInterval: seconds)
        let cpu = try XCTUnwrap(sidecar.cpuSeconds()) - startCPU
        let wall = Date().timeIntervalSince(start)
        XCTAssertLessThan(cpu / wall, 0.3, "CPU used while clients wait: \(cpu) s in \(wall) s")
        let size = sidecar.outputSize
        print("descriptor exhaustion [\(name)]: CPU \(cpu) s over \(wall) s wall, \(size) bytes of output")
        XCTAssertLessThan(size, 64 * 1024, "bytes written: \(size)")
        if size < 1024 * 1024 {
            XCTAssertEqual(sidecar.nonJSONLines().prefix(5), [], "every output line is JSON")
        }
    }

    /// The default maxClientConnections, derived from a 256-descriptor limit, keeps the process
    /// out of descriptor exhaustion altogether.
    func testFourHundredClientsUnderTwoHundredFiftySixDescriptors() throws {
        let sidecar = try CapturedSidecar(configPath: try config(), descriptorLimit: 256)
        let listening = sidecar.jsonLines().first { $0["msg"] as? String == "listening" }
        XCTAssertEqual(listening?["descriptorLimit"] as? String, "256")
        XCTAssertEqual(listening?["maxClientConnections"] as? String, "96", "half of (256 - 64)")
        var clients = try openClients(400, port: sidecar.port)
        try assertQuiet(sidecar, for: 2)
        assertServed(clients[0], "/first", "a connection accepted before the limit is still served")

        clients.removeAll()
        let fresh = try XCTUnwrap(SimpleClient(port: sidecar.port, timeout: 10))
        assertServed(fresh, "/after", "accepting resumed once the clients left")
        XCTAssertEqual(sidecar.nonJSONLines().prefix(5), [])
    }

    /// With a limit above what the descriptors allow, accept fails (EMFILE): the listener pauses
    /// with a backoff, logs rate-limited JSON lines and counts every failure.
    func testAcceptErrorsPauseInsteadOfSpinning() throws {
        let sidecar = try CapturedSidecar(configPath: try config("maxClientConnections: 1000"), descriptorLimit: 256)
        let first = try XCTUnwrap(SimpleClient(port: sidecar.port, timeout: 5))
        // One request first, so a pooled backend connection exists for the one made below
        // (with every descriptor taken, a new backend connection could not be opened).
        assertServed(first, "/warm", "before exhaustion")
        var clients = try openClients(399, port: sidecar.port)
        try assertQuiet(sidecar, for: 2)
        assertServed(first, "/during", "an accepted connection keeps working while accepting is paused")
        let failures = sidecar.jsonLines().filter { ($0["msg"] as? String)?.hasPrefix("accept failed") == true }
        XCTAssertFalse(failures.isEmpty, "accept failures are logged")
        XCTAssertLessThanOrEqual(failures.count, 4, "at most one line a second")
        XCTAssertEqual(failures.first?["error"] as? String, "Too many open files")

        clients.removeAll()
        let fresh = try XCTUnwrap(SimpleClient(port: sidecar.port, timeout: 10))
        assertServed(fresh, "/after", "accepting resumed once the clients left")
        let admin = try XCTUnwrap(SimpleClient(port: sidecar.adminPort))
        admin.send("GET /metrics HTTP/1.1\r\nHost: admin\r\n\r\n")
        let metrics = try XCTUnwrap(admin.response()).body
        let line = metrics.split(separator: "\n").first { $0.hasPrefix("token_sidecar_accept_errors_total") }
        let count = try XCTUnwrap(line.flatMap { Double($0.split(separator: " ").last ?? "") })
        XCTAssertGreaterThan(count, 0, "every failure is counted")
        XCTAssertEqual(sidecar.nonJSONLines().prefix(5), [])
    }
}
