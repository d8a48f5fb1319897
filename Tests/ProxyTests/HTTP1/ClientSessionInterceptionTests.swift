@_spi(Testing) import EventLoop
import Crypto
import TestSupport
import XCTest
@testable import Proxy

/// HTTPS interception without a socket: a CONNECT to an intercepting route is answered `200`,
/// the app's first byte decides between TLS and plaintext, and the requests inside must be for
/// the tunnel's origin — the in-memory stream plays the app's TLS (its ClientHello names a
/// server and a protocol), so what the session decides is checked without OpenSSL or the kernel.
final class ClientSessionInterceptionTests: XCTestCase {
    private static let connect = "CONNECT secure.test:443 HTTP/1.1\r\nHost: secure.test:443\r\n\r\n"
    private static let established = "HTTP/1.1 200 Connection established\r\n\r\n"

    /// A client whose CONNECT to `secure.test:443` was answered and taken, its first byte awaited.
    private func tunnel(_ harness: SessionHarness, file: StaticString = #filePath, line: UInt = #line) -> MemoryStream {
        let client = harness.connectClient()
        client.receive(Self.connect)
        XCTAssertEqual(client.readAll(), Self.established, file: file, line: line)
        client.clearDelivered()
        return client
    }

    func testARequestForAnotherHostInsideTheTunnelIs421AndNothingGoesUpstream() throws {
        let harness = try SessionHarness(intercepting: true)
        let client = tunnel(harness)
        client.sendClientHello(serverName: "secure.test")
        XCTAssertTrue(client.isTLS, "the stream continues as the TLS server")
        let leaf = try X509Certificate(pem: Array(try XCTUnwrap(client.tlsServerContext?.leafCertificatePEM).utf8))
        XCTAssertEqual(leaf.commonName, "secure.test", "the leaf the CA minted for the tunnel's origin")
        client.completeHandshake()
        client.receive("GET /x HTTP/1.1\r\nHost: other.test\r\n\r\n")
        let response = client.readAll()
        XCTAssertTrue(response.hasPrefix("HTTP/1.1 421 "), response)
        XCTAssertTrue(response.contains("Proxy-Status: token-sidecar; error=http_request_denied"), response)
        XCTAssertEqual(harness.backends.count, 0, "nothing upstream")
    }

    func testAServerNameForAnotherHostIs421() throws {
        let harness = try SessionHarness(intercepting: true)
        let client = tunnel(harness)
        client.sendClientHello(serverName: "other.test")
        client.completeHandshake()
        client.receive("GET /x HTTP/1.1\r\nHost: secure.test\r\n\r\n")
        let response = client.readAll()
        XCTAssertTrue(response.hasPrefix("HTTP/1.1 421 "), response)
        XCTAssertEqual(harness.backends.count, 0)
    }

    func testARequestForTheTunnelsOriginGoesUpstreamWithTheToken() throws {
        let harness = try SessionHarness(intercepting: true)
        let client = tunnel(harness)
        client.sendClientHello(serverName: "secure.test")
        client.completeHandshake()
        client.receive("GET /x HTTP/1.1\r\nHost: secure.test\r\nAuthorization: Bearer app\r\n\r\n")
        let backend = try XCTUnwrap(harness.connectedBackend(), "a backend was opened")
        let target = try XCTUnwrap(harness.targets.last)
        XCTAssertEqual(target.host, "backend.test")
        XCTAssertEqual(target.port, 8443)
        XCTAssertNotNil(target.tls, "the route's upstream is https: TLS is originated")
        let request = String(decoding: backend.peerReads(), as: UTF8.self)
        XCTAssertTrue(request.hasPrefix("GET /x HTTP/1.1\r\n"), request)
        XCTAssertEqual(request.components(separatedBy: "Authorization: ").count - 1, 1, request)
        XCTAssertTrue(request.contains("Authorization: Bearer tok-1\r\n"), request)
        backend.receive("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
        XCTAssertTrue(client.readAll().hasSuffix("\r\n\r\nok"))
    }

    func testAPlaintextFirstByteContinuesAsPlainHTTPForTheOrigin() throws {
        let harness = try SessionHarness(intercepting: true)
        let client = tunnel(harness)
        client.receive("GET /x HTTP/1.1\r\nHost: other.test\r\n\r\n")
        XCTAssertFalse(client.isTLS)
        XCTAssertEqual(client.unread.first, UInt8(ascii: "G"), "the first byte was only peeked: the request waits for the tunnel's session")
        client.deliver()
        XCTAssertTrue(client.readAll().hasPrefix("HTTP/1.1 421 "), "the plaintext requests must be for the origin too")
    }

    func testAnAppThatLeavesBeforeItsFirstByteIsCounted() throws {
        let harness = try SessionHarness(intercepting: true)
        let client = tunnel(harness)
        client.end(.endOfStream)
        XCTAssertEqual(client.ending, .closed)
        XCTAssertEqual(harness.context.interception?.failureCounts[InterceptFailureKey(host: "secure.test", reason: "closed")], 1,
                       "\(String(describing: harness.context.interception?.failureCounts))")
    }

    func testAHandshakeThatNeverCompletesIsCutAtClientHeader() throws {
        let harness = try SessionHarness(intercepting: true)
        let client = tunnel(harness)
        client.sendClientHello(serverName: "secure.test")
        let session = try XCTUnwrap(harness.session(of: client))
        session.headTimer.expire()
        XCTAssertEqual(client.ending, .closed)
        XCTAssertEqual(harness.context.interception?.failureCounts[InterceptFailureKey(host: "secure.test", reason: "timeout")], 1)
    }

    func testBytesAfterTheCONNECTBeforeItsAnswerAre400() throws {
        let harness = try SessionHarness(intercepting: true)
        let client = harness.connectClient()
        client.receive(Self.connect + "\u{16}early")
        XCTAssertTrue(client.readAll().hasPrefix("HTTP/1.1 400 "))
        XCTAssertFalse(client.isTLS)
    }
}
