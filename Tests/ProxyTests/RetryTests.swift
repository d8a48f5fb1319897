import Foundation
import TestSupport
import XCTest

/// A backend that closes every connection right after responding, without saying so: the proxy must
/// not turn its stale pooled connections into client-visible errors, nor send a request twice.
final class RetryTests: XCTestCase {
    /// Sends requests from `make` one at a time over a keep-alive client connection (reconnecting
    /// after a failure), and returns how many did not come back as 200 plus a few examples.
    private func runSequential(proxyPort: Int, count: Int, make: (Int) -> String) -> (errors: Int, examples: [String]) {
        var errors = 0
        var examples: [String] = []
        var client: RawClient?
        for i in 0..<count {
            do {
                if client == nil { client = try RawClient(port: proxyPort, timeout: 5) }
                client?.send(make(i))
                guard let response = try client?.readResponse() else { continue }
                if response.status != 200 {
                    errors += 1
                    if examples.count < 5 { examples.append("#\(i): \(response.status) \(response.text)") }
                    if response.header("Connection")?.lowercased() == "close" { client = nil }
                }
            } catch {
                errors += 1
                if examples.count < 5 { examples.append("#\(i): \(error)") }
                client = nil
            }
            // Keep a broken implementation from taking minutes (every failure may cost a client timeout).
            if errors >= 25 {
                examples.append("stopped after \(i + 1) of \(count) requests")
                break
            }
        }
        return (errors, examples)
    }

    func testThousandSequentialGETsOverOneClientConnectionAllSucceed() throws {
        let backend = try ClosingBackend()
        let proxy = try ProxyHarness(yaml: ProxyHarness.yaml(backendPort: backend.port))
        let result = runSequential(proxyPort: proxy.port, count: 1000) { i in
            "GET /g/\(i) HTTP/1.1\r\nHost: api.test\r\n\r\n"
        }
        XCTAssertEqual(result.errors, 0, "requests that did not get a 200: \(result.examples)")
    }

    func testPOSTsAreNeitherLostNorDuplicated() throws {
        let backend = try ClosingBackend()
        let proxy = try ProxyHarness(yaml: ProxyHarness.yaml(backendPort: backend.port))
        let result = runSequential(proxyPort: proxy.port, count: 200) { i in
            let body = "payload-\(i)"
            return "POST /p/\(i) HTTP/1.1\r\nHost: api.test\r\nContent-Type: text/plain\r\nContent-Length: \(body.utf8.count)\r\n\r\n\(body)"
        }
        XCTAssertEqual(result.errors, 0, "requests that did not get a 200: \(result.examples)")
        let counts = backend.countsByTarget()
        let missing = (0..<200).filter { counts["/p/\($0)"] == nil }
        let duplicated = counts.filter { $0.value != 1 }.map { "\($0.key) x\($0.value)" }.sorted()
        XCTAssertEqual(missing.count, 0, "POSTs that never reached the backend, e.g. \(missing.prefix(10).map { "/p/\($0)" })")
        XCTAssertEqual(duplicated, [], "POSTs the backend received more than once")
        XCTAssertEqual(counts.count, 200, "distinct targets the backend received")
    }
}
