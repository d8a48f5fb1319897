@testable import EventLoop
import Foundation
import TestSupport
import XCTest

/// The TLS server side of ``ByteStream`` (``Connection/acceptTLS(socket:context:on:)``, what
/// HTTPS interception terminates with): a verifying client completes the handshake against the
/// presented certificate and bytes flow both ways; a client that does not trust the CA, or asks
/// for another name, is refused; a peer that sends plain text is ended, not served.
final class TLSServerStreamTests: XCTestCase {
    /// Echoes what it reads, prefixed, and remembers whether the handshake completed.
    private final class EchoServer: ConnectionDelegate {
        var streams: [any ByteStream] = []
        var handshakes = 0
        var ends: [ConnectionEnd] = []
        func adopt(_ stream: any ByteStream) {
            streams.append(stream)
            stream.delegate = self
            stream.startReading()
        }
        func connectionDidConnect(_ connection: any ByteStream) { handshakes += 1 }
        func connectionDidRead(_ connection: any ByteStream) {
            let bytes = connection.input.peekBytes(max: connection.input.count)
            connection.input.drain(bytes.count)
            connection.write(Array("echo:".utf8) + bytes)
        }
        func connection(_ connection: any ByteStream, didEnd reason: ConnectionEnd) {
            ends.append(reason)
            connection.close()
        }
    }

    /// Collects what a client receives and how it ended.
    private final class Collector: ConnectionDelegate {
        var received: [UInt8] = []
        var connected = false
        var end: ConnectionEnd?
        func connectionDidConnect(_ connection: any ByteStream) { connected = true }
        func connectionDidRead(_ connection: any ByteStream) {
            received += connection.input.peekBytes(max: connection.input.count)
            connection.input.drain(connection.input.count)
        }
        func connection(_ connection: any ByteStream, didEnd reason: ConnectionEnd) {
            end = reason
            connection.close()
        }
    }

    /// Runs the loop on this thread until `condition` holds (checked every 5 ms), at most 10 s.
    private func runLoop(_ loop: EventLoop, until condition: @escaping () -> Bool) -> Bool {
        let deadline = ContinuousClock.now + .seconds(10)
        let check = LoopTimer(on: loop, after: .zero, repeating: .milliseconds(5)) {
            if condition() || ContinuousClock.now >= deadline { loop.stop() }
        }
        loop.run()
        check.cancel()
        return condition()
    }

    func testAVerifyingClientTalksToTheTLSServer() throws {
        let ca = try TestCA()
        let loop = try EventLoop()
        let server = EchoServer()
        let context = try TLSServerContext(certificateFile: ca.localhostCert, keyFile: ca.localhostKey)
        let listener = try Listener(address: loopback, on: loop, tls: context) { server.adopt($0) }
        let collector = Collector()
        let client = try XCTUnwrap(Connection.connectTLS(host: "localhost", port: listener.address.port,
                                                         context: TLSClientContext(caFile: ca.caCert), on: loop, delegate: collector))
        client.startReading()
        client.write(Array("ping".utf8))
        XCTAssertTrue(runLoop(loop) { collector.received.count >= 9 })
        XCTAssertEqual(String(decoding: collector.received, as: UTF8.self), "echo:ping")
        XCTAssertTrue(collector.connected && client.isTLS)
        XCTAssertEqual(server.handshakes, 1, "the server side reports its completed handshake")
        XCTAssertTrue(server.streams.first?.isTLS ?? false)
        client.close()
        XCTAssertTrue(runLoop(loop) { !server.ends.isEmpty }, "the server sees the client leave")
        server.streams.forEach { $0.close() }
    }

    /// Thirty clients connecting at once, with the server in the same loop: their handshakes
    /// run a few steps per loop iteration (``EventLoop/handshakesPerIteration``: a burst of
    /// them in one iteration held every other connection of the worker for tens of
    /// milliseconds), and every one of them completes and is served.
    func testABurstOfHandshakesIsSpreadOverIterationsAndEveryOneCompletes() throws {
        let ca = try TestCA()
        let loop = try EventLoop()
        let server = EchoServer()
        let listener = try Listener(address: loopback, on: loop,
                                    tls: TLSServerContext(certificateFile: ca.localhostCert, keyFile: ca.localhostKey)) { server.adopt($0) }
        let trust = try TLSClientContext(caFile: ca.caCert)
        var clients: [(Collector, any ByteStream)] = []
        for _ in 0..<30 {
            let collector = Collector()
            let stream = try XCTUnwrap(Connection.connectTLS(host: "localhost", port: listener.address.port, context: trust,
                                                             on: loop, delegate: collector))
            stream.startReading()
            stream.write(Array("ping".utf8))
            clients.append((collector, stream))
        }
        XCTAssertTrue(runLoop(loop) { clients.allSatisfy { $0.0.received.count >= 9 } }, "every client was answered")
        XCTAssertEqual(server.handshakes, 30)
        XCTAssertTrue(clients.allSatisfy { String(decoding: $0.0.received, as: UTF8.self) == "echo:ping" })
        // The turns: as many as the budget in one callback, and as many again in the very next
        // iteration (a timer of no delay armed by the first: the same tick of the coarse clock,
        // which a budget counted by libevent's cached time shared between iterations).
        var granted: [Int] = []
        let count = { (0..<20).filter { _ in loop.takeHandshakeTurn() }.count }
        let second = LoopTimer(on: loop) { granted.append(count()) }
        let first = LoopTimer(on: loop, after: .zero) {
            granted.append(count())
            second.schedule(after: .zero)
        }
        XCTAssertTrue(runLoop(loop) { granted.count == 2 })
        XCTAssertEqual(granted, [EventLoop.handshakesPerIteration, EventLoop.handshakesPerIteration])
        first.cancel()
        second.cancel()
        clients.forEach { $0.1.close() }
        server.streams.forEach { $0.close() }
    }

    /// An echoing TLS server and a way to open verified client connections to it that share one
    /// client context (so one session cache), each returned once its handshake completed.
    private func resumingServer() throws -> (EventLoop, EchoServer, () throws -> (Collector, any ByteStream)) {
        let ca = try TestCA()
        let loop = try EventLoop()
        let server = EchoServer()
        let listener = try Listener(address: loopback, on: loop,
                                    tls: TLSServerContext(certificateFile: ca.localhostCert, keyFile: ca.localhostKey)) { server.adopt($0) }
        let trust = try TLSClientContext(caFile: ca.caCert)
        let connect = { [self] () throws -> (Collector, any ByteStream) in
            let collector = Collector()
            let stream = try XCTUnwrap(Connection.connectTLS(host: "localhost", port: listener.address.port, context: trust,
                                                             on: loop, delegate: collector))
            stream.startReading()
            XCTAssertTrue(runLoop(loop) { collector.connected })
            return (collector, stream)
        }
        return (loop, server, connect)
    }

    /// Sessions resume by ticket, and a TLS 1.3 ticket leaves with the server's first bytes,
    /// never on its own right after the handshake: a lone ticket arriving while the app writes
    /// its first request hangs clients that read and write one TLS connection from two threads.
    func testATicketLeavesWithTheFirstAnswerAndResumesTheNextConnection() throws {
        let (loop, server, connect) = try resumingServer()
        let (first, firstStream) = try connect()
        let quietUntil = ContinuousClock.now + .milliseconds(200)
        _ = runLoop(loop) { ContinuousClock.now >= quietUntil }
        XCTAssertTrue(first.received.isEmpty)
        let (_, early) = try connect()
        XCTAssertFalse(early.tlsSessionResumed, "no ticket reached the client before the server wrote")
        firstStream.write(Array("ping".utf8))
        XCTAssertTrue(runLoop(loop) { first.received.count >= 9 })
        let (_, later) = try connect()
        XCTAssertTrue(later.tlsSessionResumed, "the ticket that came with the answer resumes the next connection")
        [firstStream, early, later].forEach { $0.close() }
        server.streams.forEach { $0.close() }
    }

    /// One ticket resumes every later connection to the same server, one after the other, not
    /// only the first: OpenSSL marks a session object used once it resumed a connection, so the
    /// client keeps a copy of the newest session and offers each new connection its own.
    func testOneTicketResumesEveryLaterConnection() throws {
        let (loop, server, connect) = try resumingServer()
        let (first, firstStream) = try connect()
        firstStream.write(Array("ping".utf8))
        XCTAssertTrue(runLoop(loop) { first.received.count >= 9 }, "the answer brings the one ticket")
        var streams = [firstStream]
        for index in 1...4 {
            // No answer on these: no further ticket arrives.
            let (_, stream) = try connect()
            XCTAssertTrue(stream.tlsSessionResumed, "connection \(index + 1) resumed")
            streams.append(stream)
        }
        streams.forEach { $0.close() }
        server.streams.forEach { $0.close() }
    }

    func testAClientThatDoesNotTrustTheCertificateIsRefused() throws {
        let ca = try TestCA()
        let other = try TestCA()
        let loop = try EventLoop()
        let server = EchoServer()
        let listener = try Listener(address: loopback, on: loop,
                                    tls: TLSServerContext(certificateFile: ca.otherCert, keyFile: ca.otherKey)) { server.adopt($0) }
        for (name, trust) in [("localhost", other.caCert), ("localhost", ca.caCert)] {
            // The first trusts another CA; the second trusts the CA but asks for a name the
            // certificate (other.test) does not carry.
            let collector = Collector()
            let client = try XCTUnwrap(Connection.connectTLS(host: name, port: listener.address.port,
                                                             context: TLSClientContext(caFile: trust), on: loop, delegate: collector))
            client.write(Array("secret".utf8))
            XCTAssertTrue(runLoop(loop) { collector.end != nil })
            guard case .tlsCertificate = collector.end else { return XCTFail("expected a certificate failure, got \(String(describing: collector.end))") }
            XCTAssertFalse(collector.connected)
        }
        XCTAssertEqual(server.handshakes, 0)
        server.streams.forEach { $0.close() }
    }

    func testAPlainTextPeerIsEndedNotServed() throws {
        let ca = try TestCA()
        let loop = try EventLoop()
        let server = EchoServer()
        let listener = try Listener(address: loopback, on: loop,
                                    tls: TLSServerContext(certificateFile: ca.localhostCert, keyFile: ca.localhostKey)) { server.adopt($0) }
        let collector = Collector()
        let client = try XCTUnwrap(Connection.connect(to: listener.address, tls: nil, on: loop, delegate: collector))
        client.startReading()
        client.write(Array("GET / HTTP/1.1\r\nHost: x\r\n\r\n".utf8))
        XCTAssertTrue(runLoop(loop) { !server.ends.isEmpty })
        XCTAssertEqual(server.handshakes, 0)
        XCTAssertFalse(String(decoding: collector.received, as: UTF8.self).contains("echo:"), "nothing is served without a handshake")
        client.close()
    }

    /// Answers every request with a body that ends with the connection, then closes gracefully.
    private final class CloseDelimitedServer: ConnectionDelegate {
        var streams: [any ByteStream] = []
        func adopt(_ stream: any ByteStream) {
            streams.append(stream)
            stream.delegate = self
            stream.startReading()
        }
        func connectionDidRead(_ connection: any ByteStream) {
            connection.input.drain(connection.input.count)
            connection.write(Array("HTTP/1.1 200 OK\r\nConnection: close\r\n\r\nbody-until-close".utf8))
            connection.closeAfterFlush()
        }
        func connection(_ connection: any ByteStream, didEnd reason: ConnectionEnd) { connection.close() }
    }

    /// A TLS server ends a close-delimited body with `close_notify`: a strict client (Python's
    /// ssl with ragged EOFs not suppressed — curl ignores a missing `close_notify`) takes it as
    /// the end of the body, not as a truncation.
    func testAGracefulCloseSaysCloseNotifyToAStrictClient() throws {
        let ca = try TestCA()
        let loop = try EventLoop()
        let server = CloseDelimitedServer()
        let listener = try Listener(address: loopback, on: loop,
                                    tls: TLSServerContext(certificateFile: ca.localhostCert, keyFile: ca.localhostKey)) { server.adopt($0) }
        let (status, printed) = try strictClient(ca: ca, port: listener.address.port, loop: loop, then: """
            tls.sendall(b"GET / HTTP/1.1\\r\\nHost: localhost\\r\\n\\r\\n")
            received = b""
            try:
                while chunk := tls.recv(65536):
                    received += chunk
            except ssl.SSLEOFError as error:
                print("truncated:", error)
                sys.exit(1)
            sys.stdout.write(received.split(b"\\r\\n\\r\\n", 1)[1].decode())
            """)
        XCTAssertEqual(status, 0, printed)
        XCTAssertEqual(printed, "body-until-close")
        server.streams.forEach { $0.close() }
    }

    /// Closes each stream gracefully as soon as its handshake completed, having written nothing
    /// (a draining proxy ending an idle app connection).
    private final class CloseAtOnceServer: ConnectionDelegate {
        var streams: [any ByteStream] = []
        func adopt(_ stream: any ByteStream) {
            streams.append(stream)
            stream.delegate = self
            stream.startReading()
        }
        func connectionDidConnect(_ connection: any ByteStream) { connection.closeAfterFlush() }
        func connectionDidRead(_ connection: any ByteStream) {}
        func connection(_ connection: any ByteStream, didEnd reason: ConnectionEnd) { connection.close() }
    }

    /// The TLS 1.3 ticket asked for at the handshake is still unsent when nothing was written:
    /// OpenSSL refuses to shut down such a connection ("in init") unless the ticket goes first.
    /// A strict client must see `close_notify`, not a truncation.
    func testAGracefulCloseRightAfterTheHandshakeStillSaysCloseNotify() throws {
        let ca = try TestCA()
        let loop = try EventLoop()
        let server = CloseAtOnceServer()
        let listener = try Listener(address: loopback, on: loop,
                                    tls: TLSServerContext(certificateFile: ca.localhostCert, keyFile: ca.localhostKey)) { server.adopt($0) }
        let (_, printed) = try strictClient(ca: ca, port: listener.address.port, loop: loop, then: """
            try:
                print("clean" if tls.recv(65536) == b"" else "data")
            except ssl.SSLEOFError as error:
                print("truncated:", error)
            """)
        XCTAssertEqual(printed, "clean\n")
        server.streams.forEach { $0.close() }
    }

    /// Runs a strict TLS client (Python's `ssl`, ragged EOFs not suppressed: a close without
    /// `close_notify` is a truncation) against `port` while the loop runs: it verifies
    /// `localhost` against `ca`, then runs `script` with the connection as `tls`. Returns its
    /// exit status and what it printed (stdout and stderr).
    private func strictClient(ca: TestCA, port: Int, loop: EventLoop, then script: String) throws -> (Int32, String) {
        let client = Process()
        client.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        client.arguments = ["python3", "-c", """
            import socket, ssl, sys
            context = ssl.create_default_context(cafile=sys.argv[1])
            raw = socket.create_connection(("127.0.0.1", int(sys.argv[2])), timeout=10)
            tls = context.wrap_socket(raw, server_hostname="localhost", suppress_ragged_eofs=False)

            """ + script, ca.caCert, String(port)]
        let output = Pipe()
        client.standardOutput = output
        client.standardError = output
        try client.run()
        XCTAssertTrue(runLoop(loop) { !client.isRunning })
        client.waitUntilExit()
        return (client.terminationStatus, String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self))
    }

    func testAServerContextNamesTheFileItCannotUse() {
        XCTAssertThrowsError(try TLSServerContext(certificateFile: "/nonexistent/cert.pem", keyFile: "/nonexistent/key.pem")) { error in
            XCTAssertTrue("\(error)".contains("/nonexistent/cert.pem"), "\(error)")
        }
    }
}
