import Foundation
import TestSupport
import XCTest

/// Upstream 401s: a replay sends exactly the original request with a new token, a body past the
/// resend limit gets its 401 at once, and a backend that rejects everything never makes the
/// proxy storm the token server.
final class UnauthorizedReplayTests: XCTestCase {
    private func yaml(tokens: TokenServer, backend: MisbehavingBackend, extra: String = "") -> String {
        """
        listen: "127.0.0.1:0"
        workers: 1
        credentials:
          partner:
            type: oauth2
            tokenUrl: "http://127.0.0.1:\(tokens.port)/oauth/token"
            clientId: "client-1"
            secret: "s3cret"
        \(extra)
        routes:
          - host: "api.test"
            upstream: "http://127.0.0.1:\(backend.port)"
            credential: partner
        """
    }

    private static func sha256(_ bytes: [UInt8]) -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", "-c", "import hashlib,sys; print(hashlib.sha256(sys.stdin.buffer.read()).hexdigest())"]
        let input = Pipe()
        let output = Pipe()
        process.standardInput = input
        process.standardOutput = output
        try? process.run()
        input.fileHandleForWriting.write(Data(bytes))
        try? input.fileHandleForWriting.close()
        process.waitUntilExit()
        return String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            .trimmingCharacters(in: .whitespacesAndNewlines)
    }

    private let body: [UInt8] = (0..<1024).map { UInt8(truncatingIfNeeded: $0 * 7 + 3) }

    private func assertReplayed(head: String, send wire: [[UInt8]], file: StaticString = #filePath, line: UInt = #line) throws {
        let tokens = try TokenServer()
        let backend = try MisbehavingBackend()
        let proxy = try ProxyHarness(yaml: yaml(tokens: tokens, backend: backend))
        let client = try RawClient(port: proxy.port)
        client.send(head)
        if head.contains("Expect: 100-continue") {
            XCTAssertEqual(try client.readResponse(interim: true).status, 100, file: file, line: line)
        }
        for piece in wire {
            client.send(piece)
            Thread.sleep(forTimeInterval: 0.02)
        }
        let response = try client.readResponse()
        XCTAssertEqual(response.status, 200, "replayed once with the new token", file: file, line: line)
        let echo = try XCTUnwrap(response.json, file: file, line: line)
        XCTAssertEqual(echo["body_len"] as? Int, 1024, file: file, line: line)
        XCTAssertEqual(echo["body_sha256"] as? String, Self.sha256(body), "exactly the original body", file: file, line: line)
        XCTAssertEqual(echo["authorization"] as? String, "Bearer tok-2", file: file, line: line)
        let seen = backend.requests(path: "/401-once")
        XCTAssertEqual(seen.count, 2, file: file, line: line)
        XCTAssertEqual(Set(seen.compactMap { $0["body_sha256"] as? String }), [Self.sha256(body)], file: file, line: line)
        XCTAssertEqual(proxy.metrics().upstreamUnauthorized["partner"], 1, file: file, line: line)
    }

    func testContentLengthBodyIsReplayedWhole() throws {
        try assertReplayed(head: "POST /401-once HTTP/1.1\r\nHost: api.test\r\nContent-Length: 1024\r\n\r\n",
                           send: [Array(body[..<300]), Array(body[300...])])
    }

    func testChunkedBodyIsReplayedWhole() throws {
        var pieces: [[UInt8]] = []
        for start in stride(from: 0, to: 1024, by: 256) {
            pieces.append(Array("100\r\n".utf8) + Array(body[start..<start + 256]) + Array("\r\n".utf8))
        }
        pieces.append(Array("0\r\n\r\n".utf8))
        try assertReplayed(head: "POST /401-once HTTP/1.1\r\nHost: api.test\r\nTransfer-Encoding: chunked\r\n\r\n", send: pieces)
    }

    func testExpectContinueBodyIsReplayedWhole() throws {
        try assertReplayed(head: "POST /401-once HTTP/1.1\r\nHost: api.test\r\nContent-Length: 1024\r\nExpect: 100-continue\r\n\r\n",
                           send: [body])
    }

    func testBodyPastTheResendLimitGetsThe401AtOnceAndIsSentOnce() throws {
        let tokens = try TokenServer()
        let backend = try MisbehavingBackend()
        let proxy = try ProxyHarness(yaml: yaml(tokens: tokens, backend: backend))
        let client = try RawClient(port: proxy.port, timeout: 5)
        let large = [UInt8](repeating: 0x62, count: 100 * 1024)
        let started = Date()
        client.send("POST /401-once HTTP/1.1\r\nHost: api.test\r\nContent-Length: \(large.count)\r\n\r\n")
        client.send(large)
        let response = try client.readResponse()
        XCTAssertEqual(response.status, 401, "passed through, never a partial replay")
        XCTAssertLessThan(Date().timeIntervalSince(started), 2)
        Thread.sleep(forTimeInterval: 0.3)
        XCTAssertEqual(backend.requests(path: "/401-once").count, 1)
    }

    func testABackendThatRejectsEverythingDoesNotStormTheTokenServer() throws {
        let tokens = try TokenServer()
        let backend = try MisbehavingBackend()
        let proxy = try ProxyHarness(yaml: yaml(tokens: tokens, backend: backend,
                                                extra: "    unauthorizedRefetchInterval: 2s"))
        let seconds = 5.0
        let deadline = Date().addingTimeInterval(seconds)
        let results = ResultCounter()
        let port = proxy.port
        DispatchQueue.concurrentPerform(iterations: 20) { _ in
            guard let client = try? RawClient(port: port, timeout: 10) else { results.add(0); return }
            var count = 0
            while Date() < deadline && count < 2000 {
                client.send("GET /401-always HTTP/1.1\r\nHost: api.test\r\n\r\n")
                guard let response = try? client.readResponse() else { results.add(-1); return }
                results.add(response.status)
                count += 1
            }
        }
        let statuses = results.all()
        print("401 storm: \(statuses.count) requests, \(tokens.requests().count) token fetches in \(seconds) s")
        XCTAssertGreaterThan(statuses.count, 100)
        XCTAssertEqual(Set(statuses), [401], "every request answered with the backend's 401, never 503/504")
        // The first token; the refetch its first 401 starts at once; then, the tokens being
        // rejected before any success, refetches 1 s and 2 s (the 2 s interval caps it) apart.
        XCTAssertLessThanOrEqual(tokens.requests().count, 5)
        XCTAssertGreaterThanOrEqual(Int(proxy.metrics().upstreamUnauthorized["partner"] ?? 0), statuses.count,
                                    "every 401 counted (a replay's second 401 too)")
    }

    func testRequestsAreNotDelayedWhileA401RefetchRuns() throws {
        let tokens = try TokenServer()
        let backend = try MisbehavingBackend()
        let proxy = try ProxyHarness(yaml: yaml(tokens: tokens, backend: backend))
        let warm = try RawClient(port: proxy.port)
        warm.send("GET /ok HTTP/1.1\r\nHost: api.test\r\n\r\n")
        XCTAssertEqual(try warm.readResponse().status, 200)
        try tokens.setControl(["delay": 1.5])
        let rejected = try RawClient(port: proxy.port)
        rejected.send("GET /401-always HTTP/1.1\r\nHost: api.test\r\n\r\n")
        Thread.sleep(forTimeInterval: 0.2)  // the refetch is running now
        for index in 0..<5 {
            let started = Date()
            warm.send("GET /ok?n=\(index) HTTP/1.1\r\nHost: api.test\r\n\r\n")
            XCTAssertEqual(try warm.readResponse().status, 200)
            XCTAssertLessThan(Date().timeIntervalSince(started), 0.5, "the current token stays in use")
        }
        XCTAssertEqual(Set(backend.requests(path: "/ok").compactMap { $0["authorization"] as? String }), ["Bearer tok-1"])
        // The held request is replayed with the new token and its second 401 is passed on.
        XCTAssertEqual(try rejected.readResponse().status, 401)
        XCTAssertEqual(backend.requests(path: "/401-always").compactMap { $0["authorization"] as? String },
                       ["Bearer tok-1", "Bearer tok-2"])
    }
}

/// Statuses collected from concurrent clients.
private final class ResultCounter: @unchecked Sendable {
    private let lock = NSLock()
    private var statuses: [Int] = []
    func add(_ status: Int) { lock.lock(); statuses.append(status); lock.unlock() }
    func all() -> [Int] { lock.lock(); defer { lock.unlock() }; return statuses }
}
