import TestSupport
import XCTest

/// Keep-alive toward the client, pooling toward the backend, pipelining in order.
final class KeepAliveTests: XCTestCase {
    func testHundredSequentialRequestsUseOneUpstreamConnection() throws {
        let backend = try Backend()
        let proxy = try ProxyHarness(yaml: ProxyHarness.yaml(backendPort: backend.port))
        let client = try RawClient(port: proxy.port)
        for i in 0..<100 {
            client.send("GET http://api.test/seq/\(i) HTTP/1.1\r\nHost: api.test\r\n\r\n")
            let response = try client.readResponse()
            XCTAssertEqual(response.status, 200)
            XCTAssertNil(response.header("Connection"))
        }
        let requests = backend.requests()
        XCTAssertEqual(requests.count, 100)
        XCTAssertEqual(Set(requests.compactMap { $0["conn"] as? Int }).count, 1, "all requests over one upstream connection")
        XCTAssertEqual(backend.connections().count, 1)
    }

    func testPipelinedRequestsAreAnsweredInOrder() throws {
        let backend = try Backend()
        let proxy = try ProxyHarness(yaml: ProxyHarness.yaml(backendPort: backend.port))
        let client = try RawClient(port: proxy.port)
        var burst = ""
        for i in 0..<10 {
            burst += i == 4
                ? "POST /p/\(i) HTTP/1.1\r\nHost: api.test\r\nContent-Length: 3\r\n\r\nabc"
                : "GET /p/\(i) HTTP/1.1\r\nHost: api.test\r\n\r\n"
        }
        client.send(burst)
        for i in 0..<10 {
            let response = try client.readResponse()
            XCTAssertEqual(response.status, 200)
            XCTAssertEqual(response.json?["target"] as? String, "/p/\(i)")
        }
    }

    func testHTTP10KeepsAliveOnlyWhenAsked() throws {
        let backend = try Backend()
        let proxy = try ProxyHarness(yaml: ProxyHarness.yaml(backendPort: backend.port))
        let keep = try RawClient(port: proxy.port)
        keep.send("GET /k1 HTTP/1.0\r\nHost: api.test\r\nConnection: keep-alive\r\n\r\n")
        let first = try keep.readResponse()
        XCTAssertEqual(first.status, 200)
        XCTAssertEqual(first.header("Connection")?.lowercased(), "keep-alive")
        keep.send("GET /k2 HTTP/1.0\r\nHost: api.test\r\nConnection: keep-alive\r\n\r\n")
        XCTAssertEqual(try keep.readResponse().status, 200)

        let once = try RawClient(port: proxy.port)
        once.send("GET /once HTTP/1.0\r\nHost: api.test\r\n\r\n")
        XCTAssertEqual(try once.readResponse().status, 200)
        XCTAssertTrue(once.waitForClose())
    }

    func testConnectionCloseFromClientClosesAfterResponse() throws {
        let backend = try Backend()
        let proxy = try ProxyHarness(yaml: ProxyHarness.yaml(backendPort: backend.port))
        let client = try RawClient(port: proxy.port)
        client.send("GET /bye HTTP/1.1\r\nHost: api.test\r\nConnection: close\r\n\r\n")
        let response = try client.readResponse()
        XCTAssertEqual(response.status, 200)
        XCTAssertEqual(response.header("Connection"), "close")
        XCTAssertTrue(client.waitForClose())
    }

    func testSeveralWorkersServeConcurrentClients() throws {
        let backend = try Backend()
        let proxy = try ProxyHarness(yaml: ProxyHarness.yaml(backendPort: backend.port, workers: 2))
        let port = proxy.port
        let group = DispatchGroup()
        let failures = LockedCounter()
        for c in 0..<8 {
            DispatchQueue.global().async(group: group) {
                do {
                    let client = try RawClient(port: port)
                    for i in 0..<25 {
                        client.send("GET /w/\(c)/\(i) HTTP/1.1\r\nHost: api.test\r\n\r\n")
                        if try client.readResponse().status != 200 { failures.increment() }
                    }
                } catch { failures.increment() }
            }
        }
        XCTAssertEqual(group.wait(timeout: .now() + 60), .success)
        XCTAssertEqual(failures.value, 0)
        XCTAssertEqual(backend.requests().count, 200)
        withExtendedLifetime(proxy) {}
    }
}

/// A thread-safe counter for tests that fan out.
final class LockedCounter: @unchecked Sendable {
    private let lock = NSLock()
    private var count = 0
    func increment() { lock.lock(); count += 1; lock.unlock() }
    var value: Int { lock.lock(); defer { lock.unlock() }; return count }
}
