import Foundation
import XCTest

/// `run` starts itself once more with glibc's larger per-thread cache, keeps an operator's own
/// `GLIBC_TUNABLES`, and never starts again in a loop.
final class AllocatorTuningTests: XCTestCase {
    /// The running process's environment, as the kernel has it (the PID survives the exec).
    private func environment(of sidecar: SidecarProcess) throws -> [String] {
        let raw = try Data(contentsOf: URL(fileURLWithPath: "/proc/\(sidecar.process.processIdentifier)/environ"))
        return raw.split(separator: 0).map { String(decoding: $0, as: UTF8.self) }
    }

    /// The backend the sidecar's route goes to (kept while the test runs).
    private var backend: FixtureServer?

    // XCTest keeps every test case object until the run ends, and a process that exits
    // releases nothing: without this the backends stayed running after the tests.
    override func tearDown() {
        backend = nil
        super.tearDown()
    }

    private func sidecar(environment: [String: String]) throws -> SidecarProcess {
        let backend = try FixtureServer.backend(log: "b.jsonl")
        self.backend = backend
        let path = try writeConfig(staticRouteConfig(upstream: "http://127.0.0.1:\(backend.port)", extra: ["accessLog: false"]))
        return try SidecarProcess(configPath: path, environment: environment)
    }

    func testRunStartsOnceMoreWithTheLargerCacheAndServes() throws {
        let sidecar = try sidecar(environment: [:])
        defer { sidecar.signal(SIGKILL) }
        let environment = try environment(of: sidecar)
        XCTAssertTrue(environment.contains("GLIBC_TUNABLES=glibc.malloc.tcache_count=256"), "\(environment)")
        XCTAssertTrue(environment.contains("TOKEN_SIDECAR_ALLOCATOR_TUNED=1"), "the started process does not start again")
        let client = try XCTUnwrap(SimpleClient(port: sidecar.port))
        client.send("GET /x HTTP/1.1\r\nHost: api.test\r\n\r\n")
        XCTAssertEqual(client.response()?.status, 200)
    }

    func testAnOperatorsOwnSettingIsKeptAndNothingStartsAgain() throws {
        let sidecar = try sidecar(environment: ["GLIBC_TUNABLES": ""])
        defer { sidecar.signal(SIGKILL) }
        let environment = try environment(of: sidecar)
        XCTAssertTrue(environment.contains("GLIBC_TUNABLES="), "\(environment)")
        XCTAssertFalse(environment.contains { $0.hasPrefix("TOKEN_SIDECAR_ALLOCATOR_TUNED=") }, "\(environment)")
    }

    func testAProcessThatWasStartedAgainDoesNotStartOnceMoreEvenWithoutTheSetting() throws {
        // (glibc drops GLIBC_TUNABLES itself for a process with raised privileges: the marker
        // alone must stop a second start.)
        let sidecar = try sidecar(environment: ["TOKEN_SIDECAR_ALLOCATOR_TUNED": "1"])
        defer { sidecar.signal(SIGKILL) }
        let environment = try environment(of: sidecar)
        XCTAssertFalse(environment.contains { $0.hasPrefix("GLIBC_TUNABLES=") }, "\(environment)")
        let client = try XCTUnwrap(SimpleClient(port: sidecar.port))
        client.send("GET /x HTTP/1.1\r\nHost: api.test\r\n\r\n")
        XCTAssertEqual(client.response()?.status, 200)
    }
}
