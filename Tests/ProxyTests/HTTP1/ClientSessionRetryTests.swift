import TestSupport
import XCTest
@testable import Proxy

/// A backend that closes every connection right after responding, without saying so, over
/// in-memory streams (``SessionHarness``): whenever its close arrives — with the response,
/// while the connection is idle, or still unreported when the next request takes the
/// connection — the proxy turns no stale pooled connection into a client-visible error, and
/// sends no request twice.
final class ClientSessionRetryTests: XCTestCase {
    /// When a backend connection's close arrives.
    private enum CloseTiming: CaseIterable {
        /// Seen with the response's last bytes (before the connection is released).
        case withTheResponse
        /// Reported while the connection is idle in the pool.
        case whileIdle
        /// Arrived but unreported when the next request takes the connection (reported after).
        case unreportedUntilTheNextRequest
    }

    /// Sends `count` requests from `make` one at a time over one client connection (a new one
    /// if the proxy closed it); every backend connection reads one request, answers 200 and
    /// closes, its close arriving as ``CloseTiming`` cycles. Returns the requests that did not
    /// get a 200 (a few examples), how often the backend read each target, and how many
    /// requests were sent on a connection whose close was still unreported (and then retried).
    private func runSequential(count: Int, make: (Int) -> String) throws
        -> (errors: Int, examples: [String], counts: [String: Int], sentOnClosed: Int) {
        let harness = try SessionHarness()
        var client = harness.connectClient()
        var errors = 0
        var examples: [String] = []
        var counts: [String: Int] = [:]
        var unreported: MemoryStream?
        var sentOnClosed = 0
        for i in 0..<count {
            client.clearDelivered()
            client.receive(make(i))
            // The close the last connection's backend sent is noticed now (if the request went
            // there, the backend never read it).
            if let stale = unreported, !stale.output.isEmpty { sentOnClosed += 1 }
            unreported?.end(.endOfStream)
            unreported = nil
            let backend = try XCTUnwrap(harness.connectedBackend())
            let request = String(decoding: backend.peerReads(), as: UTF8.self)
            if let line = request.split(separator: "\r\n").first, line.split(separator: " ").count == 3 {
                counts[String(line.split(separator: " ")[1]), default: 0] += 1
            }
            let timing = CloseTiming.allCases[i % CloseTiming.allCases.count]
            if timing == .withTheResponse { backend.endUnreported() }
            backend.receive("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
            switch timing {
            case .withTheResponse: backend.end(.endOfStream)
            case .whileIdle: backend.end(.endOfStream)
            case .unreportedUntilTheNextRequest:
                backend.endUnreported()
                unreported = backend
            }
            let response = client.readAll()
            if !(response.hasPrefix("HTTP/1.1 200 ") && response.hasSuffix("\r\n\r\nok")) {
                errors += 1
                if examples.count < 5 { examples.append("#\(i) (\(timing)): \(response)") }
            }
            if client.ending != .open { client = harness.connectClient() }
        }
        return (errors, examples, counts, sentOnClosed)
    }

    func testThousandSequentialGETsOverOneClientConnectionAllSucceed() throws {
        let result = try runSequential(count: 1000) { i in "GET http://api.test/g/\(i) HTTP/1.1\r\nHost: api.test\r\n\r\n" }
        XCTAssertEqual(result.errors, 0, "requests that did not get a 200: \(result.examples)")
        XCTAssertEqual(result.counts.count, 1000, "distinct targets the backend received")
        XCTAssertEqual(result.counts.values.filter { $0 != 1 }.count, 0, "GETs the backend read more than once")
        XCTAssertEqual(result.sentOnClosed, 333, "a GET takes a pooled connection without a peek; when it turns out closed, it is retried")
    }

    func testPOSTsAreNeitherLostNorDuplicated() throws {
        let result = try runSequential(count: 200) { i in
            let body = "payload-\(i)"
            return "POST http://api.test/p/\(i) HTTP/1.1\r\nHost: api.test\r\nContent-Type: text/plain\r\n"
                + "Content-Length: \(body.utf8.count)\r\n\r\n\(body)"
        }
        XCTAssertEqual(result.errors, 0, "requests that did not get a 200: \(result.examples)")
        let missing = (0..<200).filter { result.counts["/p/\($0)"] == nil }
        let duplicated = result.counts.filter { $0.value != 1 }.map { "\($0.key) x\($0.value)" }.sorted()
        XCTAssertEqual(missing.count, 0, "POSTs that never reached the backend, e.g. \(missing.prefix(10).map { "/p/\($0)" })")
        XCTAssertEqual(duplicated, [], "POSTs the backend received more than once")
        XCTAssertEqual(result.counts.count, 200, "distinct targets the backend received")
        XCTAssertEqual(result.sentOnClosed, 0, "a POST is never sent on a connection whose close has arrived")
    }
}
