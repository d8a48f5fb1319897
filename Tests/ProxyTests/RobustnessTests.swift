import Foundation
import TestSupport
import XCTest

/// Slow peers and half-closes: nothing is cut short that should not be.
final class RobustnessTests: XCTestCase {
    func testSlowReaderOfAClosingResponseStillGetsEverything() throws {
        let backend = try Backend()
        let proxy = try ProxyHarness(yaml: ProxyHarness.yaml(backendPort: backend.port))
        let client = try RawClient(port: proxy.port, timeout: 20)
        // HTTP/1.0 + chunked upstream body: relayed close-delimited, then the proxy closes.
        let size = 8 * 1024 * 1024
        client.send("GET /download?size=\(size)&mode=chunked HTTP/1.0\r\nHost: api.test\r\n\r\n")
        Thread.sleep(forTimeInterval: 3) // longer than the 2 s linger
        let response = try client.readResponse()
        XCTAssertEqual(response.body.count, size, "the tail of a closing response must not be dropped")
    }

    func testSlowUploadIsNotMistakenForASlowBackend() throws {
        let backend = try Backend()
        let yaml = ProxyHarness.yaml(backendPort: backend.port) + "\ntimeouts: {responseHeaders: 1s}\n"
        let proxy = try ProxyHarness(yaml: yaml)
        let client = try RawClient(port: proxy.port)
        client.send("POST /upload HTTP/1.1\r\nHost: api.test\r\nContent-Length: 30\r\n\r\n")
        for _ in 0..<3 {
            client.send("0123456789")
            Thread.sleep(forTimeInterval: 0.7)
        }
        let response = try client.readResponse()
        XCTAssertEqual(response.status, 200, "responseHeaders counts from the end of the request, not its start")
        XCTAssertEqual(response.json?["body_len"] as? Int, 30)
    }

    func testChunkedBodyThatNeverStartsGets408() throws {
        let backend = try Backend()
        let yaml = ProxyHarness.yaml(backendPort: backend.port) + "\ntimeouts: {clientHeader: 1s}\n"
        let proxy = try ProxyHarness(yaml: yaml)
        let client = try RawClient(port: proxy.port, timeout: 5)
        client.send("POST /x HTTP/1.1\r\nHost: api.test\r\nTransfer-Encoding: chunked\r\n\r\n")
        let started = Date()
        let response = try client.readResponse()
        XCTAssertEqual(response.status, 408)
        XCTAssertLessThan(Date().timeIntervalSince(started), 4)
        XCTAssertTrue(client.waitForClose())
        XCTAssertEqual(backend.connections().count, 0)
    }

    func testTunnelKeepsRelayingAfterTheClientHalfCloses() throws {
        let backend = try Backend()
        let yaml = ProxyHarness.yaml(backendPort: backend.port) + "\nconnect: {allow: [\"127.0.0.1:\(backend.port)\"]}\n"
        let proxy = try ProxyHarness(yaml: yaml)
        let client = try RawClient(port: proxy.port)
        client.send("CONNECT 127.0.0.1:\(backend.port) HTTP/1.1\r\nHost: 127.0.0.1:\(backend.port)\r\n\r\n")
        XCTAssertEqual(try client.readResponse(head: true).status, 200)
        client.send("GET /through-tunnel HTTP/1.1\r\nHost: x\r\n\r\n")
        client.shutdownWrite()
        let response = try client.readResponse()
        XCTAssertEqual(response.status, 200, "the answer to a request sent before the half-close arrives")
        XCTAssertEqual(response.json?["target"] as? String, "/through-tunnel")
        XCTAssertEqual(Backend.headerValues(try XCTUnwrap(backend.requests().first), "Authorization"), [], "nothing injected into tunnels")
    }

    /// A client that closes or resets first (after a keep-alive exchange, or before sending
    /// anything) leaves nothing to linger for: its descriptor is released at once, not after the
    /// lingering close's cap (3 × 2 s), which let closing clients pile up descriptors that no
    /// connection limit counted.
    func testClientThatClosesFirstReleasesItsDescriptorAtOnce() throws {
        let backend = try Backend()
        let proxy = try ProxyHarness(yaml: ProxyHarness.yaml(backendPort: backend.port))
        func openDescriptors() -> Int { (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd").count) ?? -1 }
        // Warm up: the pooled upstream connection exists from now on.
        let first = try RawClient(port: proxy.port)
        first.send("GET /x HTTP/1.1\r\nHost: api.test\r\n\r\n")
        XCTAssertEqual(try first.readResponse().status, 200)
        first.close()
        Thread.sleep(forTimeInterval: 0.5)
        let baseline = openDescriptors()
        for index in 0..<40 {
            let client = try RawClient(port: proxy.port)
            if index % 2 == 0 {
                client.send("GET /x HTTP/1.1\r\nHost: api.test\r\n\r\n")
                XCTAssertEqual(try client.readResponse().status, 200)
            }
            // Half leave with FIN, half with a reset (RST), each after an exchange or none.
            client.close(reset: index % 4 >= 2)
        }
        let closed = Date()
        while openDescriptors() > baseline && Date().timeIntervalSince(closed) < 10 {
            Thread.sleep(forTimeInterval: 0.05)
        }
        let elapsed = Date().timeIntervalSince(closed)
        XCTAssertLessThanOrEqual(openDescriptors(), baseline, "descriptors of closed clients are still open")
        XCTAssertLessThan(elapsed, 1.5, "descriptors were held \(elapsed) s after the clients closed (the linger cap is 6 s)")
    }

    /// Slow POST: clients dripping short bodies hold only their own connections. The body is
    /// collected before a backend connection is taken, so with every backend connection the
    /// limit allows (2 here) "in use" by drippers, another client is still answered at once, and
    /// a dripped body arrives whole.
    func testClientsDrippingBodiesDoNotHoldBackendConnections() throws {
        let backend = try Backend()
        let proxy = try ProxyHarness(yaml: ProxyHarness.yaml(backendPort: backend.port) + "\nmaxConnectionsPerUpstream: 2\n")
        let drippers = try (0..<4).map { _ in try RawClient(port: proxy.port, timeout: 10) }
        for client in drippers {
            client.send("POST /upload HTTP/1.1\r\nHost: api.test\r\nContent-Length: 100\r\n\r\n0123456789")
        }
        for _ in 0..<5 {
            Thread.sleep(forTimeInterval: 0.1)
            for client in drippers { client.send("0123456789") }
        }
        XCTAssertEqual(backend.connections().count, 0, "no backend connection for a body still arriving")
        let other = try RawClient(port: proxy.port, timeout: 10)
        let started = Date()
        other.send("GET /x HTTP/1.1\r\nHost: api.test\r\n\r\n")
        XCTAssertEqual(try other.readResponse().status, 200)
        XCTAssertLessThan(Date().timeIntervalSince(started), 1, "the other client waited for the drippers")
        for client in drippers { client.send("0123456789012345678901234567890123456789") }
        for client in drippers {
            let response = try client.readResponse()
            XCTAssertEqual(response.status, 200)
            XCTAssertEqual(response.json?["body_len"] as? Int, 100, "the collected body arrives whole")
        }
    }

    /// A client that stops sending a body being collected gets 408 after `bodyIdle`, and the
    /// backend never hears of the request.
    func testAStalledCollectedBodyGets408() throws {
        let backend = try Backend()
        let proxy = try ProxyHarness(yaml: ProxyHarness.yaml(backendPort: backend.port) + "\ntimeouts: {bodyIdle: 1s}\n")
        let client = try RawClient(port: proxy.port, timeout: 10)
        client.send("POST /upload HTTP/1.1\r\nHost: api.test\r\nContent-Length: 100\r\n\r\n0123456789")
        let started = Date()
        let response = try client.readResponse()
        XCTAssertEqual(response.status, 408)
        XCTAssertTrue(response.header("Proxy-Status")?.contains("error=http_request_error") ?? false)
        XCTAssertEqual(response.json?["error"] as? String, "http_request_error")
        XCTAssertLessThan(Date().timeIntervalSince(started), 5, "bodyIdle is 1 s")
        XCTAssertEqual(backend.connections().count, 0)
    }
}
