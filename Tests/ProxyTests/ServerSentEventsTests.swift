import Foundation
import TestSupport
import XCTest

/// A response without a length that arrives in pieces (server-sent events, one every 100 ms)
/// reaches the app piece by piece: never held for a buffer to fill, never spooled, with the
/// spool on. Measured as each event's delay from the backend's send to the app's read.
final class ServerSentEventsTests: XCTestCase {
    private var directory: URL!

    override func setUpWithError() throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("sse-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    }

    override func tearDown() { try? FileManager.default.removeItem(at: directory) }

    private func events(proxy: ProxyHarness, url: String, cafile: String? = nil) throws -> [String: Any] {
        var arguments = ["python3", Backend.fixtures.appendingPathComponent("sse_client.py").path,
                         "--proxy", String(proxy.port), "--url", url]
        if let cafile { arguments += ["--cafile", cafile] }
        let outcome = try Command.run(arguments, timeout: 60)
        let object = try? JSONSerialization.jsonObject(with: Data(outcome.out.utf8)) as? [String: Any]
        return object ?? ["error": outcome.err]
    }

    private func assertEveryEventOnTime(_ result: [String: Any], _ what: String, file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertEqual(result["status"] as? Int, 200, "\(what): \(result)", file: file, line: line)
        XCTAssertEqual(result["events"] as? Int, 20, "\(what): \(result)", file: file, line: line)
        XCTAssertLessThan(result["p99_ms"] as? Double ?? 999, 20, "\(what): \(result)", file: file, line: line)
    }

    func testEventsArriveAsTheyAreSentOverPlainHTTPAndThroughInterception() throws {
        let plain = try FixtureProcess(script: Backend.fixtures.appendingPathComponent("sse_backend.py"))
        let ca = try TestCA()
        let tls = try FixtureProcess(script: Backend.fixtures.appendingPathComponent("sse_backend.py"),
                                     arguments: ["--tls-cert", ca.localhostCert, "--tls-key", ca.localhostKey])
        let caFile = directory.appendingPathComponent("ca.crt").path
        let proxy = try ProxyHarness(yaml: """
            listen: "127.0.0.1:0"
            spool: {directory: "\(directory.path)", maxBytes: 64MiB}
            intercept: {caCertFile: "\(caFile)"}
            credentials:
              api: {type: static, token: abc}
            routes:
              - host: "api.test"
                upstream: "http://127.0.0.1:\(plain.port)"
                credential: api
              - host: "localhost:\(tls.port)"
                intercept: true
                credential: api
                caFile: "\(ca.caCert)"
            """)
        for path in ["/sse", "/sse-close"] {
            assertEveryEventOnTime(try events(proxy: proxy, url: "http://api.test\(path)?n=20&interval=100"), "plain \(path)")
            assertEveryEventOnTime(try events(proxy: proxy, url: "https://localhost:\(tls.port)\(path)?n=20&interval=100",
                                              cafile: caFile), "intercepted \(path)")
        }
        XCTAssertEqual(proxy.metrics().spooledResponses, 0, "a client that keeps up is never spooled")
    }
}
