@_spi(Testing) import EventLoop
import TestSupport
import XCTest
@testable import Proxy

/// Upgrades over in-memory streams (``SessionHarness``): what reaches the backend, when a `101`
/// turns both connections into one byte stream, and every way an upgrade stays plain HTTP (the
/// smuggling vectors: a body, a protocol not allowed, a `101` nobody asked for, bytes after a
/// refusal).
final class ClientSessionUpgradeTests: XCTestCase {
    private func upgrade(_ protocolName: String = "websocket", extra: String = "") -> String {
        "GET http://api.test/ws HTTP/1.1\r\nHost: api.test\r\nConnection: Upgrade\r\nUpgrade: \(protocolName)\r\n"
            + "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\nAuthorization: Bearer app-own\r\n"
            + extra + "\r\n"
    }

    private let switching = "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
        + "Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\nKeep-Alive: timeout=5\r\n\r\n"

    private func received(_ backend: MemoryStream) -> String { String(decoding: backend.peerReads(), as: UTF8.self) }

    /// `request` from a new client, as the backend received it.
    private func sent(_ harness: SessionHarness, _ request: String) throws -> (client: MemoryStream, backend: MemoryStream, text: String) {
        let client = harness.connectClient()
        client.receive(request)
        let backend = try XCTUnwrap(harness.connectedBackend())
        return (client, backend, received(backend))
    }

    /// A WebSocket handshake through the proxy, then frames both ways.
    private func upgraded(_ harness: SessionHarness) throws -> (client: MemoryStream, backend: MemoryStream) {
        let client = harness.connectClient()
        client.receive(upgrade())
        let backend = try XCTUnwrap(harness.connectedBackend())
        _ = received(backend)
        backend.receive(switching)
        _ = client.readAll()
        client.clearDelivered()
        return (client, backend)
    }

    /// What the client's peer took of its output so far, as bytes (frames are not UTF-8).
    private func delivered(_ client: MemoryStream) -> [UInt8] {
        client.peerReads()
        return client.delivered
    }

    func testAWebSocketHandshakeCarriesOneTokenAndItsUpgradeFields() throws {
        let harness = try SessionHarness()
        let client = harness.connectClient()
        client.receive(upgrade())
        let backend = try XCTUnwrap(harness.connectedBackend())
        let request = received(backend)
        XCTAssertTrue(request.hasPrefix("GET /ws HTTP/1.1\r\n"), request)
        XCTAssertEqual(request.components(separatedBy: "Authorization:").count - 1, 1, request)
        XCTAssertTrue(request.contains("Authorization: Bearer tok-1\r\n"), request)
        XCTAssertFalse(request.contains("app-own"), request)
        XCTAssertTrue(request.contains("Upgrade: websocket\r\n"), request)
        XCTAssertTrue(request.contains("Connection: upgrade\r\n"), request)
        XCTAssertTrue(request.contains("Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"), request)
        XCTAssertFalse(request.contains("Connection: Upgrade\r\n"), "the client's own Connection line is replaced")
    }

    func testA101TurnsBothConnectionsIntoOneByteStream() throws {
        let harness = try SessionHarness()
        let client = harness.connectClient()
        // Frames the client sends before the 101 wait (they are not HTTP either way).
        client.receive(upgrade() + "early-frame")
        let backend = try XCTUnwrap(harness.connectedBackend())
        _ = received(backend)
        backend.receive(switching + "first-server-frame")
        let head = client.readAll()
        XCTAssertTrue(head.hasPrefix("HTTP/1.1 101 Switching Protocols\r\n"), head)
        XCTAssertTrue(head.contains("Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n"), head)
        XCTAssertTrue(head.contains("Upgrade: websocket\r\nConnection: upgrade\r\nVia: 1.1 token-sidecar\r\n\r\n"), head)
        XCTAssertFalse(head.contains("Keep-Alive"), "hop-by-hop fields of the backend's 101 stay there")
        XCTAssertTrue(head.hasSuffix("\r\n\r\nfirst-server-frame"), head)
        XCTAssertEqual(received(backend), "early-frame")
        XCTAssertEqual(harness.context.tunnels.count, 1)
        XCTAssertEqual(harness.pooled("active") + harness.pooled("idle"), 0, "the connection left the pool for good")
        XCTAssertEqual(client.timeouts.read, nil, "no read timeout per side: one clock for both ways")

        // Bytes both ways, then a close from the client ends the backend side too.
        client.clearDelivered()
        client.receive("\u{81}\u{85}abcd12345")
        XCTAssertEqual(received(backend), "\u{81}\u{85}abcd12345")
        backend.receive("\u{81}\u{02}ok")
        XCTAssertEqual(client.readAll(), "\u{81}\u{02}ok")
        XCTAssertEqual(harness.context.metrics.upgradedConnections["api.test:80"], 1)
        XCTAssertEqual(harness.context.metrics.upgradedOpen["api.test:80"], 1)
        client.end(.endOfStream)
        XCTAssertTrue(backend.finishedWriting, "the client's close is passed on")
        backend.end(.endOfStream)
        XCTAssertEqual(harness.context.tunnels.count, 0)
        XCTAssertNil(harness.context.metrics.upgradedOpen["api.test:80"])
        XCTAssertEqual(harness.context.metrics.requests[RequestCounterKey(route: "api.test:80", code: 101)], 1,
                       "counted once, when it ended")
    }

    func testTheSwitchCountsAsTheTokensSuccess() throws {
        let credential = RotatingCredential()
        let harness = try SessionHarness(credential: credential)
        _ = try upgraded(harness)
        XCTAssertEqual(credential.acceptedTokens, ["tok-1"])
    }

    func testA401ToTheHandshakeIsReplayedOnceWithTheNewToken() throws {
        let credential = RotatingCredential()
        let harness = try SessionHarness(credential: credential)
        let client = harness.connectClient()
        client.receive(upgrade())
        let first = try XCTUnwrap(harness.connectedBackend())
        XCTAssertTrue(received(first).contains("Authorization: Bearer tok-1\r\n"))
        first.receive("HTTP/1.1 401 Unauthorized\r\nContent-Length: 0\r\n\r\n")
        let second = try XCTUnwrap(harness.connectedBackend())
        XCTAssertFalse(first === second)
        let replay = received(second)
        XCTAssertTrue(replay.contains("Authorization: Bearer tok-2\r\n") && replay.contains("Upgrade: websocket\r\n"), replay)
        second.receive(switching)
        XCTAssertTrue(client.readAll().hasPrefix("HTTP/1.1 101 "))
        XCTAssertEqual(credential.rejections, 1)
        XCTAssertEqual(harness.context.tunnels.count, 1)
    }

    /// h2c, and a protocol the route does not list, go on as plain HTTP (RFC 9110 §7.8); a 101
    /// to such a request is the backend's error (502), never a tunnel.
    func testAnUpgradeTheRouteDoesNotAllowIsServedAsPlainHTTP() throws {
        for name in ["h2c", "foo/1"] {
            let harness = try SessionHarness()
            let client = harness.connectClient()
            client.receive(upgrade(name, extra: "HTTP2-Settings: AAMAAABkAAQAoAAAAAIAAAAA\r\n")
                .replacingOccurrences(of: "Connection: Upgrade", with: "Connection: Upgrade, HTTP2-Settings"))
            let backend = try XCTUnwrap(harness.connectedBackend())
            let request = received(backend)
            XCTAssertFalse(request.lowercased().contains("upgrade"), "\(name): \(request)")
            XCTAssertFalse(request.contains("HTTP2-Settings"), request)
            backend.receive("HTTP/1.1 101 Switching Protocols\r\nUpgrade: \(name)\r\nConnection: Upgrade\r\n\r\n")
            XCTAssertTrue(client.readAll().hasPrefix("HTTP/1.1 502 "), name)
            XCTAssertEqual(harness.context.tunnels.count, 0)
        }
        // Listed, it goes on.
        let harness = try SessionHarness(route: ["upgrades: [foo]"])
        let (client, backend, request) = try sent(harness, upgrade("foo/1"))
        XCTAssertTrue(request.contains("Upgrade: foo/1\r\n"))
        backend.receive("HTTP/1.1 101 Switching Protocols\r\nUpgrade: foo/1\r\nConnection: Upgrade\r\n\r\n")
        XCTAssertTrue(client.readAll().hasPrefix("HTTP/1.1 101 "))
        XCTAssertEqual(harness.context.tunnels.count, 1)
    }

    /// An upgrade with a body, or from an HTTP/1.0 client, stays HTTP: its Upgrade is removed.
    func testAnUpgradeWithABodyOrFromHTTP10IsPlainHTTP() throws {
        for request in [upgrade(extra: "Content-Length: 5\r\n") + "hello",
                        upgrade().replacingOccurrences(of: "HTTP/1.1\r\n", with: "HTTP/1.0\r\n")] {
            let harness = try SessionHarness()
            let client = harness.connectClient()
            client.receive(request)
            let backend = try XCTUnwrap(harness.connectedBackend())
            let sent = received(backend)
            XCTAssertFalse(sent.contains("Upgrade:") || sent.contains("Connection: upgrade"), sent)
            backend.receive(switching)
            XCTAssertTrue(client.readAll().hasPrefix("HTTP/1.1 502 "), "a 101 to it is refused")
        }
    }

    /// A refused handshake (401, 403, 200) is an ordinary response: bytes the client sent after
    /// its head are the next request, and frames are no HTTP: 400 and close.
    func testBytesAfterARefusedUpgradeAreReadAsHTTP() throws {
        let harness = try SessionHarness()
        let client = harness.connectClient()
        // A masked text frame, then what makes it a (malformed) head at once.
        client.receive(upgrade() + "\u{81}\u{85}abcd12345\r\n\r\n")
        let backend = try XCTUnwrap(harness.connectedBackend())
        _ = received(backend)
        backend.receive("HTTP/1.1 403 Forbidden\r\nContent-Length: 2\r\n\r\nno")
        let answer = client.readAll()
        XCTAssertTrue(answer.hasPrefix("HTTP/1.1 403 Forbidden\r\n"), answer)
        XCTAssertTrue(answer.contains("HTTP/1.1 400 "), "the frame bytes are a malformed request: \(answer)")
        XCTAssertEqual(harness.context.tunnels.count, 0)
        XCTAssertEqual(received(backend), "", "nothing of them reached the backend")
    }

    /// `maxUpgradedLifetime`: the client gets `1001 Going Away` after the frame under way, never
    /// inside it, and the backend connection is closed.
    func testTheLifetimeEndsAWebSocketAtAFrameBoundary() throws {
        let harness = try SessionHarness(route: ["maxUpgradedLifetime: 1h"])
        let (client, backend) = try upgraded(harness)
        // A 10-byte frame, of which 4 payload bytes arrive before the lifetime ends.
        backend.receive([0x82, 0x0A, 1, 2, 3, 4])
        let tunnel = try XCTUnwrap(harness.context.tunnels.values.first)
        tunnel.lifetimeTimer?.expire()
        XCTAssertEqual(delivered(client), [0x82, 0x0A, 1, 2, 3, 4], "no close inside the frame")
        XCTAssertEqual(client.ending, .open)
        backend.receive([5, 6, 7, 8, 9, 10, 0x81, 0x01, 0x41])
        XCTAssertEqual(delivered(client), [0x82, 0x0A, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 0x88, 0x02, 0x03, 0xE9],
                       "the frame completes, then the close (1001); the next frame is not relayed")
        XCTAssertNotEqual(backend.ending, .open, "the backend connection is closed")
        XCTAssertNotEqual(client.ending, .open)
        XCTAssertEqual(harness.context.tunnels.count, 0)
    }

    func testTheLifetimeEndsAtOnceBetweenFrames() throws {
        let harness = try SessionHarness(route: ["maxUpgradedLifetime: 1h"])
        let (client, backend) = try upgraded(harness)
        // A frame with a 16-bit length passes whole.
        let medium: [UInt8] = [0x82, 126, 0x01, 0x00] + Array(repeating: 7, count: 256)
        backend.receive(medium)
        XCTAssertEqual(delivered(client), medium)
        try XCTUnwrap(harness.context.tunnels.values.first).lifetimeTimer?.expire()
        XCTAssertEqual(delivered(client), medium + [0x88, 0x02, 0x03, 0xE9])
        XCTAssertNotEqual(backend.ending, .open)
    }

    /// A drain ends every upgraded WebSocket with `1001 Going Away` at a frame boundary, so its
    /// app reconnects to another instance instead of being cut at the drain timeout.
    func testADrainEndsUpgradedConnectionsWithGoingAway() throws {
        let harness = try SessionHarness()
        let (client, backend) = try upgraded(harness)
        backend.receive([0x81, 0x03, 0x61])
        var drained = false
        harness.context.beginDrain { drained = true }
        XCTAssertFalse(drained, "the frame under way is finished first")
        backend.receive([0x62, 0x63])
        XCTAssertFalse(drained, "not while the close frame is still queued for the app")
        XCTAssertEqual(delivered(client), [0x81, 0x03, 0x61, 0x62, 0x63, 0x88, 0x02, 0x03, 0xE9])
        XCTAssertNotEqual(backend.ending, .open)
        client.peerReads()
        XCTAssertTrue(drained, "no connection is left")
    }

    /// `timeouts.upgradedIdle`: one clock for both directions, restarted by bytes either way
    /// (a stream that only pushes is not idle); a tunnel silent both ways ends.
    func testAnIdleUpgradedConnectionEnds() throws {
        let harness = try SessionHarness(top: "timeouts: {upgradedIdle: 2s}")
        let (client, backend) = try upgraded(harness)
        let tunnel = try XCTUnwrap(harness.context.tunnels.values.first)
        XCTAssertTrue(tunnel.idleTimer.isScheduled)
        XCTAssertEqual(client.timeouts.read, nil)
        XCTAssertEqual(backend.timeouts.read, nil)
        backend.receive([0x81, 0x01, 0x41])
        XCTAssertEqual(delivered(client), [0x81, 0x01, 0x41])
        tunnel.idleTimer.expire()
        XCTAssertNotEqual(backend.ending, .open)
        XCTAssertNotEqual(client.ending, .open)
        XCTAssertEqual(harness.context.tunnels.count, 0)
    }

    /// A backend's 101 split at every byte switches alike (the frame after it included); one
    /// that leaves in the middle of its 101 is a 502, never a tunnel.
    func testA101SplitAnywhereOrCutShort() throws {
        let reply = Array((switching + "after").utf8)
        for cut in 1..<(reply.count - 5) {
            let harness = try SessionHarness()
            let (client, backend, _) = try sent(harness, upgrade())
            backend.receive(Array(reply[..<cut]))
            backend.receive(Array(reply[cut...]))
            let answer = client.readAll()
            XCTAssertTrue(answer.hasPrefix("HTTP/1.1 101 ") && answer.hasSuffix("\r\n\r\nafter"), "cut at \(cut): \(answer)")
            XCTAssertEqual(harness.context.tunnels.count, 1, "cut at \(cut)")
        }
        for cut in [1, 20, reply.count - 7] {
            let harness = try SessionHarness()
            let (client, backend, _) = try sent(harness, upgrade())
            backend.receive(Array(reply[..<cut]))
            backend.end(.endOfStream)
            XCTAssertTrue(client.readAll().hasPrefix("HTTP/1.1 502 "), "cut at \(cut)")
            XCTAssertEqual(harness.context.tunnels.count, 0)
        }
    }

    /// The backend switched to another protocol than the one asked for: a 502, never a tunnel.
    func testA101ToAnotherProtocolIsA502() throws {
        let harness = try SessionHarness()
        let (client, backend, request) = try sent(harness, upgrade())
        XCTAssertTrue(request.contains("Upgrade: websocket\r\n"))
        backend.receive("HTTP/1.1 101 Switching Protocols\r\nUpgrade: h2c\r\nConnection: Upgrade\r\n\r\n")
        XCTAssertTrue(client.readAll().hasPrefix("HTTP/1.1 502 "))
        XCTAssertEqual(harness.context.tunnels.count, 0)
    }

    /// `Upgrade: websocket, h2c` asks for websocket: only that goes on.
    func testOnlyTheChosenProtocolGoesOn() throws {
        let (_, _, request) = try sent(try SessionHarness(), upgrade("websocket, h2c", extra: "Upgrade: h2c\r\n"))
        XCTAssertTrue(request.contains("Upgrade: websocket\r\n"), request)
        XCTAssertFalse(request.contains("h2c"), request)
    }
}
