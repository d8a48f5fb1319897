import Foundation
import TestSupport
import XCTest

/// What a client that stops reading can make a backend on this host send on its behalf: the
/// proxy offers a loopback backend network-sized segments and a receive window that grows only
/// as the client takes bytes (``ReceiveWindow``), so a stalled client's response backs up into
/// the backend's application, not into megabytes of socket buffers the backend had to fill.
final class SlowReaderBackpressureTests: XCTestCase {
    /// How many bytes the backend's `/flood` response handed the kernel before it stopped making progress.
    private func floodQueued(_ backend: MisbehavingBackend, within seconds: Double = 15) -> Int? {
        backend.firstEvent(within: seconds) { $0["event"] as? String == "flood" }?["queued"] as? Int
    }

    /// A client with a 4 KiB receive buffer asks for 64 MiB (too large to spool: 16 MiB is a
    /// response's share) and reads nothing. Before, the whole 64 MiB went into the spool at once;
    /// with spooling off the backend handed 4.4 MiB to the kernel for such a client (its send
    /// buffer autotuned to 4 MiB on loopback's 64 KiB segments, plus the proxy's autotuned
    /// receive buffer). Now the proxy's own buffers (a 256 KiB window and read-ahead while the
    /// buffer budget has room) are most of what it sends.
    func testABackendSendsLittleForAClientThatDoesNotRead() throws {
        try assertBackendSendsLittle(spool: "")
    }

    /// The same with spooling off: the window alone keeps the backend's share small.
    func testABackendSendsLittleForAClientThatDoesNotReadWithoutASpool() throws {
        try assertBackendSendsLittle(spool: "spool: {maxBytes: 0}")
    }

    private func assertBackendSendsLittle(spool: String, file: StaticString = #filePath, line: UInt = #line) throws {
        let backend = try MisbehavingBackend()
        let proxy = try ProxyHarness(yaml: ProxyHarness.yaml(upstream: "http://127.0.0.1:\(backend.port)", top: spool))
        let client = try RawClient(port: proxy.port, timeout: 20, receiveBuffer: 4096)
        client.send("GET /flood HTTP/1.1\r\nHost: api.test\r\n\r\n")
        guard let queued = floodQueued(backend) else { return XCTFail("the backend never stopped sending", file: file, line: line) }
        XCTAssertGreaterThan(queued, 64 * 1024, "the backend sent the response's start", file: file, line: line)
        XCTAssertLessThan(queued, 1536 * 1024, "a stalled client's response backs up into the backend, not into socket buffers",
                          file: file, line: line)
        // The client still gets what it reads, in order.
        let head = try client.readResponse(head: true)
        XCTAssertEqual(head.status, 200, file: file, line: line)
        let body = try client.receive(count: 256 * 1024)
        XCTAssertTrue(body.allSatisfy { $0 == UInt8(ascii: "x") }, file: file, line: line)
    }

    /// A client that keeps up gets all 64 MiB through the same proxy: the window that starts
    /// small grows as it reads, and the backend is never left waiting on it for a second.
    func testAClientThatKeepsUpGetsTheWholeResponse() throws {
        let backend = try MisbehavingBackend()
        let proxy = try ProxyHarness(yaml: ProxyHarness.yaml(backendPort: backend.port))
        let client = try RawClient(port: proxy.port, timeout: 20)
        client.send("GET /flood HTTP/1.1\r\nHost: api.test\r\n\r\n")
        let head = try client.readResponse(head: true)
        XCTAssertEqual(head.header("Content-Length"), String(64 << 20))
        var received = 0
        while received < 64 << 20 {
            received += try client.receive(count: min(1 << 20, (64 << 20) - received)).count
        }
        XCTAssertEqual(floodQueued(backend), 64 << 20, "the backend sent everything without a 1 s stall")
    }
}
