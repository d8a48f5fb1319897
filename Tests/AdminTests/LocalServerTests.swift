import EventLoop
import HTTP1
import HTTPMessage
import JSON
import Proxy
import TestSupport
import XCTest

/// Echoes what the handler saw as JSON, so tests can check parsing end to end.
private func echo(_ request: LocalRequest) -> LocalResponse {
    .json(.object([
        ("method", .string(request.method)),
        ("path", .string(request.path)),
        ("query", .array(request.query.map { .array([.string($0.name), .string($0.value)]) })),
        ("body", .string(String(decoding: request.body, as: UTF8.self))),
        ("host", .string(request.fields.first("Host"))),
    ]))
}

final class LocalServerTests: XCTestCase {
    private var thread: ServerThread?
    private var server: LocalServer?

    override func tearDown() {
        thread?.stop()
        thread = nil
        server = nil
    }

    /// Starts a server on its own loop thread; returns its port.
    private func start(limits: LocalServerLimits = LocalServerLimits(),
                       handler: @escaping LocalServer.Responder = { request, respond in respond(echo(request)) }) throws -> Int {
        try start(limits: limits) { _ in handler }
    }

    /// Starts a server whose handler is made knowing its loop (to answer asynchronously).
    private func start(limits: LocalServerLimits = LocalServerLimits(),
                       makeHandler: (EventLoop) -> LocalServer.Responder) throws -> Int {
        var created: LocalServer?
        let thread = try ServerThread { loop in
            let server = try LocalServer(address: loopback, on: loop, limits: limits, responder: makeHandler(loop))
            created = server
            return [server]
        }
        try thread.start()
        self.thread = thread
        self.server = created
        return thread.addresses[0].port
    }

    private func connectionCount() -> Int? {
        guard let thread, let server else { return nil }
        let box = LoopObject(server)
        return onLoop(thread.loop) { box.value.connectionCount }
    }

    func testGetWithDecodedQueryAndKeepAlive() throws {
        let port = try start()
        let client = try RawClient(port: port)
        let first = try client.request("GET", "/a/b%20c?x=1&name=J%C3%BCrgen+M&flag")
        XCTAssertEqual(first.status, 200)
        XCTAssertEqual(first.header("Content-Type"), "application/json")
        XCTAssertEqual(first.header("Content-Length"), String(first.body.count))
        XCTAssertNil(first.header("Connection"))
        let object = try XCTUnwrap(first.json)
        XCTAssertEqual(object["method"] as? String, "GET")
        XCTAssertEqual(object["path"] as? String, "/a/b%20c", "the path is as sent, without the query")
        XCTAssertEqual(object["query"] as? [[String]], [["x", "1"], ["name", "Jürgen M"], ["flag", ""]])
        XCTAssertEqual(object["host"] as? String, "127.0.0.1")
        // Same connection, second request.
        let second = try client.request("GET", "/again")
        XCTAssertEqual(second.json?["path"] as? String, "/again")
    }

    func testContentLengthAndChunkedBodies() throws {
        let port = try start()
        let client = try RawClient(port: port)
        let posted = try client.request("POST", "/p", body: Array("hello=world".utf8))
        XCTAssertEqual(posted.json?["body"] as? String, "hello=world")
        client.send("POST /c HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n")
        usleep(20_000)  // the rest arrives in a later read
        client.send("6;ext=1\r\n world\r\n0\r\nTrailer-Field: 1\r\n\r\n")
        let chunked = try client.readResponse()
        XCTAssertEqual(chunked.json?["body"] as? String, "hello world")
        XCTAssertEqual(try client.request("GET", "/after").status, 200, "the connection stays usable")
    }

    func testLargestAllowedBodiesArrive() throws {
        let port = try start { request, respond in respond(.text("\(request.body.count)")) }
        let client = try RawClient(port: port)
        let body = [UInt8](repeating: 0x61, count: 1024 * 1024)
        XCTAssertEqual(try client.request("POST", "/big", body: body).text, "1048576")
        var chunked = Array("POST /big HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n".utf8)
        for _ in 0..<1024 { chunked += Array("400\r\n".utf8) + [UInt8](repeating: 0x62, count: 1024) + [13, 10] }
        chunked += Array("0\r\n\r\n".utf8)
        client.send(chunked)
        XCTAssertEqual(try client.readResponse().text, "1048576")
    }

    func testPipelinedRequestsAreAnsweredInOrder() throws {
        let port = try start()
        let client = try RawClient(port: port)
        client.send("GET /one HTTP/1.1\r\nHost: x\r\n\r\nPOST /two HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabcGET /three HTTP/1.1\r\nHost: x\r\n\r\n")
        let paths = try (0..<3).map { _ in try client.readResponse().json?["path"] as? String }
        XCTAssertEqual(paths, ["/one", "/two", "/three"])
    }

    func testAsynchronousResponsesKeepOrderAndLateAnswersAreIgnored() throws {
        // Answers on a later loop turn, and answers twice (the second must be ignored).
        let port = try start { loop in { request, respond in
            let bound = LoopBound(respond, on: loop)
            DispatchQueue.global().asyncAfter(deadline: .now() + 0.05) {
                bound.run { respond in
                    respond(echo(request))
                    respond(.text(status: 500, "second answer"))
                }
            }
        } }
        let client = try RawClient(port: port)
        client.send("GET /slow1 HTTP/1.1\r\nHost: x\r\n\r\nGET /slow2 HTTP/1.1\r\nHost: x\r\n\r\n")
        XCTAssertEqual(try client.readResponse().json?["path"] as? String, "/slow1")
        XCTAssertEqual(try client.readResponse().json?["path"] as? String, "/slow2")
        XCTAssertEqual(try client.request("GET", "/slow3").status, 200)
    }

    func testClientGoneBeforeAsyncAnswer() throws {
        let respondLater = Locked<LoopBound<(LocalResponse) -> Void>?>(nil)
        let port = try start { loop in { _, respond in
            respondLater.withLock { $0 = LoopBound(respond, on: loop) }
        } }
        do {
            let client = try RawClient(port: port)
            client.send("GET /x HTTP/1.1\r\nHost: x\r\n\r\n")
            XCTAssertTrue(eventually { respondLater.withLock { $0 != nil } })
        }  // client closed here
        // EOF looks the same as a half-close, so the session waits for the answer...
        usleep(50_000)
        XCTAssertEqual(connectionCount(), 1)
        // ...and then writes it into the void and closes, without harm; repeated answers are ignored.
        respondLater.withLock { $0 }?.run { respond in
            respond(.text("too late"))
            respond(.text("later still"))
        }
        XCTAssertTrue(eventually { self.connectionCount() == 0 })
    }

    func testMalformedRequestGets400AndClose() throws {
        let port = try start()
        let client = try RawClient(port: port)
        client.send("GET /x HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n")
        let response = try client.readResponse()
        XCTAssertEqual(response.status, 400)
        XCTAssertEqual(response.header("Connection"), "close")
        XCTAssertNotNil(response.json?["error"])
        XCTAssertTrue(client.waitForClose(acceptingReset: true))

        let bareLF = try RawClient(port: port)
        bareLF.send("GET / HTTP/1.1\nHost: x\n\n")
        XCTAssertEqual(try bareLF.readResponse().status, 400)
    }

    func testOversizedHeadGets431() throws {
        let port = try start(limits: LocalServerLimits(maxHeadBytes: 1024))
        let client = try RawClient(port: port)
        client.send("GET / HTTP/1.1\r\nHost: x\r\nX-Big: \(String(repeating: "a", count: 2000))\r\n\r\n")
        XCTAssertEqual(try client.readResponse().status, 431)
        XCTAssertTrue(client.waitForClose(acceptingReset: true))
    }

    func testOversizedBodiesGet413() throws {
        let port = try start(limits: LocalServerLimits(maxBodyBytes: 100))
        let declared = try RawClient(port: port)
        declared.send("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 101\r\n\r\n")
        let response = try declared.readResponse()
        XCTAssertEqual(response.status, 413)
        XCTAssertEqual(response.header("Connection"), "close")
        XCTAssertTrue(declared.waitForClose(acceptingReset: true))

        let chunked = try RawClient(port: port)
        chunked.send("POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n40\r\n\(String(repeating: "a", count: 64))\r\n40\r\n")
        XCTAssertEqual(try chunked.readResponse().status, 413)
        XCTAssertTrue(chunked.waitForClose(acceptingReset: true))

        let exact = try RawClient(port: port)
        XCTAssertEqual(try exact.request("POST", "/", body: Array(repeating: 0x61, count: 100)).status, 200)
    }

    func testBadChunkedFramingGets400() throws {
        let port = try start()
        let client = try RawClient(port: port)
        client.send("POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n")
        XCTAssertEqual(try client.readResponse().status, 400)
        XCTAssertTrue(client.waitForClose(acceptingReset: true))
    }

    func testHTTP10ClosesUnlessKeepAlive() throws {
        let port = try start()
        let plain = try RawClient(port: port)
        plain.send("GET /old HTTP/1.0\r\n\r\n")
        let response = try plain.readResponse()
        XCTAssertEqual(response.status, 200)
        XCTAssertEqual(response.header("Connection"), "close")
        XCTAssertTrue(plain.waitForClose(acceptingReset: true))

        let keepAlive = try RawClient(port: port)
        keepAlive.send("GET /old HTTP/1.0\r\nConnection: keep-alive\r\n\r\n")
        XCTAssertEqual(try keepAlive.readResponse().header("Connection"), "keep-alive")
        keepAlive.send("GET /again HTTP/1.0\r\nConnection: keep-alive\r\n\r\n")
        XCTAssertEqual(try keepAlive.readResponse().status, 200)
    }

    func testConnectionCloseRequestAndHalfClosedClientStillGetAnswers() throws {
        let port = try start()
        let client = try RawClient(port: port)
        client.send("GET /bye HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        XCTAssertEqual(try client.readResponse().header("Connection"), "close")
        XCTAssertTrue(client.waitForClose(acceptingReset: true))

        let halfClosed = try RawClient(port: port)
        halfClosed.send("GET /half HTTP/1.1\r\nHost: x\r\n\r\n")
        halfClosed.shutdownWrite()
        XCTAssertEqual(try halfClosed.readResponse().json?["path"] as? String, "/half")
        XCTAssertTrue(halfClosed.waitForClose(acceptingReset: true))
    }

    func testHeadHasNoBodyButContentLength() throws {
        let port = try start()
        let client = try RawClient(port: port)
        let head = try client.request("HEAD", "/h")
        XCTAssertEqual(head.status, 200)
        XCTAssertGreaterThan(Int(head.header("Content-Length") ?? "0") ?? 0, 0)
        XCTAssertTrue(head.body.isEmpty)
        XCTAssertEqual(try client.request("GET", "/next").json?["path"] as? String, "/next",
                       "no stray body bytes were sent after the HEAD response")
    }

    func testExpectContinue() throws {
        let port = try start()
        let client = try RawClient(port: port)
        client.send("POST /e HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nExpect: 100-continue\r\n\r\n")
        XCTAssertEqual(try client.readResponse(interim: true).status, 100)
        client.send("ok")
        XCTAssertEqual(try client.readResponse().json?["body"] as? String, "ok")
    }

    func testIdleConnectionsAreClosed() throws {
        let port = try start(limits: LocalServerLimits(idleTimeout: .milliseconds(200)))
        let client = try RawClient(port: port)
        XCTAssertEqual(try client.request("GET", "/").status, 200)
        let started = Date()
        XCTAssertTrue(client.waitForClose(acceptingReset: true))
        XCTAssertLessThan(Date().timeIntervalSince(started), 3)
        XCTAssertTrue(eventually { self.connectionCount() == 0 })
    }

    func testConnectionLimit() throws {
        let port = try start(limits: LocalServerLimits(maxConnections: 1))
        let first = try RawClient(port: port)
        XCTAssertEqual(try first.request("GET", "/").status, 200)
        let second = try RawClient(port: port)
        XCTAssertTrue(second.waitForClose(acceptingReset: true), "over the limit: closed at once")
        XCTAssertEqual(try first.request("GET", "/").status, 200)
    }

    func testCloseStopsListeningAndClosesConnections() throws {
        let port = try start()
        let client = try RawClient(port: port)
        XCTAssertEqual(try client.request("GET", "/").status, 200)
        let box = LoopObject(try XCTUnwrap(server))
        let closed: Bool? = onLoop(try XCTUnwrap(thread).loop) { box.value.close(); return true }
        XCTAssertEqual(closed, true)
        XCTAssertTrue(client.waitForClose(acceptingReset: true))
        XCTAssertThrowsError(try RawClient(port: port), "nothing listens any more")
    }

    func testUnsafeHandlerHeadersAreDroppedAndFramingIsTheServers() throws {
        let port = try start { _, respond in
            respond(LocalResponse(status: 200, headers: [
                ("X-Ok", "yes"), ("X-Evil", "a\r\nSet-Cookie: x=1"), ("Content-Length", "999"),
                ("Transfer-Encoding", "chunked"),
            ], body: Array("body".utf8)))
        }
        let response = try fetch(port: port, "/")
        XCTAssertEqual(response.header("X-Ok"), "yes")
        XCTAssertNil(response.header("X-Evil"))
        XCTAssertNil(response.header("Set-Cookie"))
        XCTAssertNil(response.header("Transfer-Encoding"))
        XCTAssertEqual(response.header("Content-Length"), "4")
        XCTAssertEqual(response.text, "body")
    }
}
