import EventLoop
import Foundation
import TestSupport
import XCTest

/// TLS on the socket path (``Connection/connect(to:tls:on:delegate:)`` and the TLS listener,
/// both a ``SocketConnection`` over a `TLSLayer`), against Python's `ssl` as the peer and
/// against itself: what OpenSSL reads ahead reaches a consumer that reads slowly, a session
/// ticket alone is not data, and the peer's `close_notify` ends the stream after every byte.
final class TLSLayerTests: XCTestCase {
    /// Collects what a client receives, draining only when told to.
    private final class SlowReader: ConnectionDelegate {
        var received: [UInt8] = []
        var connected = false
        var end: ConnectionEnd?
        var receivedBeforeEnd = 0
        func connectionDidConnect(_ connection: any ByteStream) { connected = true }
        func connectionDidRead(_ connection: any ByteStream) {}
        func take(from connection: any ByteStream) {
            let count = connection.input.count
            received += connection.input.peekBytes(max: count)
            connection.input.drain(count)
        }
        func connection(_ connection: any ByteStream, didEnd reason: ConnectionEnd) {
            take(from: connection)
            receivedBeforeEnd = received.count
            end = reason
            connection.close()
        }
    }

    /// Runs the loop on this thread, calling `tick` every millisecond, until `condition` holds
    /// (at most 20 s).
    private func runLoop(_ loop: EventLoop, tick: @escaping () -> Void = {}, until condition: @escaping () -> Bool) -> Bool {
        let deadline = ContinuousClock.now + .seconds(20)
        let check = LoopTimer(on: loop, after: .zero, repeating: .milliseconds(1)) {
            tick()
            if condition() || ContinuousClock.now >= deadline { loop.stop() }
        }
        loop.run()
        check.cancel()
        return condition()
    }

    private func pythonPeer(_ ca: TestCA, bytes: Int) throws -> FixtureProcess {
        try FixtureProcess(script: "EventLoopTests/Fixtures/tls_peer.py", arguments: [ca.localhostCert, ca.localhostKey, String(bytes)])
    }

    /// 1 MiB through a consumer that takes at most 4 KiB at a time, from a timer: OpenSSL reads
    /// 64 KiB of records ahead, which the socket never signals again, yet every byte arrives in
    /// order — and the peer's `close_notify` (its TCP connection still open) ends the stream
    /// only after the last one.
    func testRecordsReadAheadReachASlowConsumerAndCloseNotifyEndsTheStreamAfterThem() throws {
        let ca = try TestCA()
        let size = 1 << 20
        let peer = try pythonPeer(ca, bytes: size)
        let loop = try EventLoop()
        let reader = SlowReader()
        let address = try SocketAddress(host: "127.0.0.1", port: peer.port)
        let client = try XCTUnwrap(Connection.connect(to: address, tls: (TLSClientContext(caFile: ca.caCert), "localhost"),
                                                      on: loop, delegate: reader))
        XCTAssertTrue(client.isTLS)
        client.setReadHighWatermark(4096)
        client.startReading()
        XCTAssertTrue(runLoop(loop) { reader.connected }, "the handshake completes")
        client.write([0x67])
        XCTAssertTrue(runLoop(loop, tick: { if client.isOpen { reader.take(from: client) } }) { reader.end != nil },
                      "the stream ends (received \(reader.received.count) bytes)")
        XCTAssertEqual(reader.end, .endOfStream)
        XCTAssertEqual(reader.receivedBeforeEnd, size, "every byte before the end")
        let expected = (0..<size).map { UInt8($0 % 251) }
        XCTAssertTrue(reader.received == expected,
                      "bytes differ from offset \(zip(reader.received, expected).prefix { $0 == $1 }.count)")
    }

    /// The peer sent its session tickets right after the handshake, and nothing else: an idle
    /// connection whose socket holds only those is quiet (a pool would otherwise retire every
    /// TLS connection it checks), and its next connection resumes with one of them. Once the
    /// answer is in, the peek says so, and reading delivers what the peek had taken in.
    func testASessionTicketAloneIsNotDataAndResumesTheNextConnection() throws {
        let ca = try TestCA()
        let peer = try pythonPeer(ca, bytes: 5)
        let loop = try EventLoop()
        let trust = try TLSClientContext(caFile: ca.caCert)
        let address = try SocketAddress(host: "127.0.0.1", port: peer.port)
        let reader = SlowReader()
        let client = try XCTUnwrap(Connection.connect(to: address, tls: (trust, "localhost"), on: loop, delegate: reader))
        XCTAssertTrue(runLoop(loop) { reader.connected })
        XCTAssertFalse(client.tlsSessionResumed)
        let settled = ContinuousClock.now + .milliseconds(200)
        XCTAssertTrue(runLoop(loop) { ContinuousClock.now >= settled })
        XCTAssertEqual(client.peekPeer(), .quiet, "tickets are not data")
        client.write([0x67])
        let answered = ContinuousClock.now + .milliseconds(300)
        XCTAssertTrue(runLoop(loop) { ContinuousClock.now >= answered })
        XCTAssertEqual(client.peekPeer(), .data)
        client.startReading()
        XCTAssertTrue(runLoop(loop, tick: { if client.isOpen { reader.take(from: client) } }) { reader.end != nil })
        XCTAssertEqual(reader.received, [0, 1, 2, 3, 4])
        XCTAssertEqual(reader.end, .endOfStream)

        let second = SlowReader()
        let again = try XCTUnwrap(Connection.connect(to: address, tls: (trust, "localhost"), on: loop, delegate: second))
        XCTAssertTrue(runLoop(loop) { second.connected })
        XCTAssertTrue(again.tlsSessionResumed, "the ticket taken in by the peek resumes the next connection")
        again.close()
    }

    /// The socket path's TLS server and client together: a 1 MiB upload in queued pieces of
    /// every size arrives whole and echoed back, and a client that trusts another CA fails its
    /// handshake with the certificate's reason (nothing is delivered to the server).
    func testTheTLSServerAndClientOnTheSocketPathCarryALargeUploadAndRefuseAnUntrustedPeer() throws {
        let ca = try TestCA()
        let loop = try EventLoop()
        final class Echo: ConnectionDelegate {
            var streams: [any ByteStream] = []
            var received = 0
            func connectionDidRead(_ connection: any ByteStream) {
                let bytes = connection.input.peekBytes(max: connection.input.count)
                connection.input.drain(bytes.count)
                received += bytes.count
                connection.write(bytes)
            }
            func connection(_ connection: any ByteStream, didEnd reason: ConnectionEnd) { connection.close() }
        }
        let echo = Echo()
        let listener = try Listener(address: loopback, on: loop,
                                    tls: TLSServerContext(certificateFile: ca.localhostCert, keyFile: ca.localhostKey)) {
            echo.streams.append($0)
            $0.delegate = echo
            $0.startReading()
        }
        let address = try SocketAddress(host: "127.0.0.1", port: listener.address.port)
        let reader = SlowReader()
        let client = try XCTUnwrap(Connection.connect(to: address, tls: (TLSClientContext(caFile: ca.caCert), "localhost"),
                                                      on: loop, delegate: reader))
        client.startReading()
        var sent: [UInt8] = []
        var generator = SplitMix64(seed: 7)
        while sent.count < 1 << 20 {
            // Queued before the handshake completes, in pieces from 1 byte to 40 KiB.
            let piece = (0..<Int(generator.next() % 40_000) + 1).map { _ in UInt8(truncatingIfNeeded: generator.next()) }
            client.write(piece)
            sent += piece
        }
        XCTAssertTrue(runLoop(loop, tick: { if client.isOpen { reader.take(from: client) } }) { reader.received.count >= sent.count })
        XCTAssertTrue(reader.received == sent, "bytes differ from offset \(zip(reader.received, sent).prefix { $0 == $1 }.count)")
        XCTAssertEqual(echo.received, sent.count)
        client.close()

        let other = try TestCA()
        let refused = SlowReader()
        let untrusting = try XCTUnwrap(Connection.connect(to: address, tls: (TLSClientContext(caFile: other.caCert), "localhost"),
                                                          on: loop, delegate: refused))
        untrusting.write(Array("GET / HTTP/1.1\r\n\r\n".utf8))
        XCTAssertTrue(runLoop(loop) { refused.end != nil })
        guard case .tlsCertificate = refused.end else { return XCTFail("\(String(describing: refused.end))") }
        XCTAssertFalse(refused.connected)
        XCTAssertEqual(echo.received, sent.count, "nothing from the refused client reached the server")
        echo.streams.forEach { $0.close() }
    }
}
