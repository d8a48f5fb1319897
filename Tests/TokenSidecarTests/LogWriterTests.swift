import Foundation
import XCTest

/// Logging never holds up proxying: lines are queued for a writer thread.
final class LogWriterTests: XCTestCase {
    /// stderr is a pipe whose reader stops after the first line (a wedged log collector). Every
    /// request still gets its answer at once: with a `write(2)` per access line on the worker,
    /// the worker would block for good once the 64 KiB pipe filled (~200 lines).
    func testAStuckLogReaderNeverStallsTheProxy() throws {
        let path = try writeConfig(staticRouteConfig(upstream: "http://127.0.0.1:9", admin: false,
                                                 extra: ["otherHosts: deny", "accessLog: true"]))
        let sidecar = try SidecarProcess(configPath: path)
        let client = try XCTUnwrap(SimpleClient(port: sidecar.port, timeout: 5))
        let started = Date()
        for index in 0..<3000 {
            client.send("GET http://elsewhere.test/\(index) HTTP/1.1\r\nHost: elsewhere.test\r\n\r\n")
            guard let response = client.response() else {
                // A process wedged in write(2) cannot act on SIGTERM: do not wait for it.
                kill(sidecar.process.processIdentifier, SIGKILL)
                XCTFail("no answer to request \(index) after \(Date().timeIntervalSince(started)) s: the proxy waited for its log reader")
                return
            }
            XCTAssertEqual(response.status, 403)
        }
    }
}
