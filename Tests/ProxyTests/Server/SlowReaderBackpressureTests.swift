import Foundation
import TestSupport
import XCTest

/// What a client that stops reading can make a backend on this host send on its behalf: the
/// proxy offers a loopback backend network-sized segments and a receive window that grows only
/// as the client takes bytes (``ReceiveWindow``), so a stalled client's response backs up into
/// the backend's application, not into megabytes of socket buffers the backend had to fill.
/// The other way too: an upload backed up into a slow backend pauses the client's socket, and
/// a close or reset the paused socket then gets is noticed at once (the kernel's part; the
/// session's part: ``ClientSessionClientAbortTests``).
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
        // 1.0 MiB on a fresh machine; 1.5 MiB once heavy loopback traffic (a benchmark) has left
        // a large congestion window in the kernel's cache of TCP metrics for 127.0.0.1, which
        // grows the backend's own send buffer (`ip tcp_metrics show`); 4.4 MiB before the window.
        XCTAssertLessThan(queued, 2048 * 1024, "a stalled client's response backs up into the backend, not into socket buffers",
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

    // MARK: - an uploader that leaves

    /// A backend that reads 16 KiB every 20 ms: the upload backs up; the client closes or resets
    /// and the upstream connection closes at once.
    func testClientCloseStopsTheUpload() throws {
        for reset in [false, true] {
            let backend = try MisbehavingBackend()
            let proxy = try ProxyHarness(yaml: ProxyHarness.yaml(backendPort: backend.port))
            let client = try RawClient(port: proxy.port)
            client.send("POST /slow-upload HTTP/1.1\r\nHost: api.test\r\nContent-Length: 50000000\r\n\r\n")
            client.send([UInt8](repeating: 0x61, count: 1024 * 1024))
            XCTAssertTrue(eventually { proxy.upstreamConnections() == 1 })
            Thread.sleep(forTimeInterval: 0.2)  // the proxy is paused: the backend reads slowly
            let left = Date()
            client.close(reset: reset)
            // The backend itself notices only after reading what is already in its socket buffer,
            // so the proxy's own count of open upstream connections is the witness here.
            XCTAssertTrue(eventually(timeout: 2) { proxy.upstreamConnections() == 0 }, "the upstream request was not aborted")
            let elapsed = Date().timeIntervalSince(left)
            print("upstream connection closed \(Int(elapsed * 1000)) ms after the uploading client \(reset ? "reset" : "closed")")
            XCTAssertLessThan(elapsed, 0.5)
        }
    }


    func testClientResetWhileItsUploadIsPausedAbortsTheUpstream() throws {
        let backend = try MisbehavingBackend()
        let proxy = try ProxyHarness(yaml: ProxyHarness.yaml(backendPort: backend.port))
        let client = try RawClient(port: proxy.port)
        client.setSendTimeout(1)
        client.send("POST /stall HTTP/1.1\r\nHost: api.test\r\nContent-Length: 1000000000\r\n\r\n")
        // The backend reads nothing: its socket buffers fill, the proxy's output reaches its
        // watermark, the proxy stops reading the client, and this send gives up after 1 s.
        client.send([UInt8](repeating: 0x61, count: 64 * 1024 * 1024))
        XCTAssertEqual(proxy.upstreamConnections(), 1)
        let left = Date()
        client.close(reset: true)
        XCTAssertTrue(eventually(timeout: 3) { proxy.upstreamConnections() == 0 },
                      "a client that left while its upload was paused must not keep the backend request open")
        let elapsed = Date().timeIntervalSince(left)
        print("upstream connection closed \(Int(elapsed * 1000)) ms after the paused uploader reset")
        XCTAssertLessThan(elapsed, 0.5)
    }

    func testBackendLearnsAtOnceWhenAPausedUploaderResets() throws {
        let backend = try MisbehavingBackend(receiveBuffer: 32 * 1024)
        let proxy = try ProxyHarness(yaml: ProxyHarness.yaml(backendPort: backend.port))
        let client = try RawClient(port: proxy.port)
        client.setSendTimeout(0.2)
        client.send("POST /slow-upload HTTP/1.1\r\nHost: api.test\r\nContent-Length: 1000000000\r\n\r\n")
        // The backend reads 16 KiB every 20 ms through a 32 KiB buffer: the proxy soon holds
        // megabytes for it and stops reading the client. Upload for 1.5 s (a blocked send gives
        // up after 0.2 s).
        let chunk = [UInt8](repeating: 0x61, count: 64 * 1024)
        let until = Date().addingTimeInterval(1.5)
        while Date() < until { client.send(chunk) }
        let left = Date().timeIntervalSince1970
        client.close(reset: true)
        // The upstream is reset, not closed behind the bytes still queued toward the backend.
        let closed = try XCTUnwrap(backend.closedAt(path: "/slow-upload", within: 5), "the backend kept receiving the abandoned upload")
        print("backend saw the abandoned upload end \(Int((closed - left) * 1000)) ms after the client reset")
        XCTAssertLessThan(closed - left, 0.5)
    }

    private func eventually(timeout: Double = 5, _ condition: () -> Bool) -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            if condition() { return true }
            Thread.sleep(forTimeInterval: 0.01)
        }
        return condition()
    }
}
