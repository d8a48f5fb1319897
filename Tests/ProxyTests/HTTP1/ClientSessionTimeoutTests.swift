@_spi(Testing) import EventLoop
import TestSupport
import XCTest
@testable import Proxy

/// `timeouts:` responseHeaders and clientHeader (1 s each) over in-memory streams: each timer is
/// armed with the configured delay, nothing is answered before it expires, and its expiry is a
/// 504 or 408 with the JSON error body and `Proxy-Status`. (The connect timeout, which needs a
/// TLS handshake that never completes, is in ``UpstreamTLSTests``.)
final class ClientSessionTimeoutTests: XCTestCase {
    private let timeouts = "timeouts: {connect: 1s, responseHeaders: 1s, clientHeader: 1s}"

    func testBackendThatNeverAnswersIs504ResponseTimeout() throws {
        let harness = try SessionHarness(top: timeouts)
        let client = harness.connectClient()
        let session = try XCTUnwrap(harness.session(of: client))
        client.receive("GET /slow HTTP/1.1\r\nHost: api.test\r\n\r\n")
        let backend = try XCTUnwrap(harness.connectedBackend())
        let requests = MemoryMessages.requests(backend.peerReads())
        XCTAssertEqual(requests.map(\.target), ["/slow"], "the request reached the backend once")
        XCTAssertEqual(session.exchangeTimer.scheduledDelay, .seconds(1), "the 1 s responseHeaders timeout is applied")
        XCTAssertEqual(client.readAll(), "", "nothing is answered before the timeout fires")
        session.exchangeTimer.expire()
        let response = MemoryMessages.response(client.readAll())
        XCTAssertEqual(response.status, 504, "body: \(response.text)")
        XCTAssertEqual(response.json?["error"] as? String, "http_response_timeout", "body: \(response.text)")
        XCTAssertTrue(response.header("Proxy-Status")?.contains("error=http_response_timeout") ?? false)
        XCTAssertEqual(harness.backends.count, 1, "not retried")
        XCTAssertTrue(backend.peerReads().isEmpty, "nothing more reached the backend")
    }

    func testIncompleteRequestHeadIs408ThenClosed() throws {
        let harness = try SessionHarness(top: timeouts)
        let client = harness.connectClient()
        let session = try XCTUnwrap(harness.session(of: client))
        client.receive("GET /x HTTP/1.1\r\nHost: api.te")
        XCTAssertEqual(session.headTimer.scheduledDelay, .seconds(1), "the 1 s clientHeader timeout is applied")
        XCTAssertEqual(client.readAll(), "", "nothing is answered before the timeout fires")
        session.headTimer.expire()
        let response = MemoryMessages.response(client.readAll())
        XCTAssertEqual(response.status, 408, "body: \(response.text)")
        let type = response.json?["error"] as? String
        XCTAssertNotNil(type, "408 carries the JSON error body; got: \(response.text)")
        XCTAssertNotNil(response.json?["message"] as? String, "408 carries a JSON message; got: \(response.text)")
        let proxyStatus = response.header("Proxy-Status") ?? ""
        XCTAssertTrue(proxyStatus.hasPrefix("token-sidecar;"), "Proxy-Status: \(proxyStatus)")
        XCTAssertTrue(proxyStatus.contains("error=\(type ?? "?")"), "Proxy-Status names the same error type: \(proxyStatus)")
        XCTAssertEqual(client.ending, .closedAfterFlush, "the connection is closed after the 408")
        XCTAssertTrue(harness.backends.isEmpty, "nothing reached the backend")
    }
}
