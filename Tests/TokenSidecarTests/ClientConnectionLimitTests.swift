import Foundation
import XCTest

/// `maxClientConnections`: a worker holding its share stops accepting until a connection closes.
final class ClientConnectionLimitTests: XCTestCase {
    func testThirdConnectionWaitsUntilOneOfTwoCloses() throws {
        let backend = try FixtureServer.backend()
        let path = try writeConfig("""
        listen: "127.0.0.1:0"
        admin: "127.0.0.1:0"
        workers: 1
        maxClientConnections: 2
        accessLog: false
        routes:
          - host: "api.test"
            upstream: "http://127.0.0.1:\(backend.port)"
        """)
        let sidecar = try SidecarProcess(configPath: path)
        var first: SimpleClient? = try XCTUnwrap(SimpleClient(port: sidecar.port))
        let second = try XCTUnwrap(SimpleClient(port: sidecar.port))
        for (client, name) in [(first!, "first"), (second, "second")] {
            client.send("GET /\(name) HTTP/1.1\r\nHost: api.test\r\n\r\n")
            XCTAssertEqual(client.response()?.status, 200, "the \(name) connection is served")
        }
        // The kernel completes the handshake (backlog), but the proxy must not take it yet.
        let third = try XCTUnwrap(SimpleClient(port: sidecar.port, timeout: 1))
        third.send("GET /third HTTP/1.1\r\nHost: api.test\r\n\r\n")
        XCTAssertNil(third.response(), "a third connection waits while two are open")
        second.send("GET /second-again HTTP/1.1\r\nHost: api.test\r\n\r\n")
        XCTAssertEqual(second.response()?.status, 200, "the open connections keep working")

        first = nil
        var answer: (status: Int, headers: [String: String], body: String)?
        // Each attempt waits up to 1 s (the client's timeout); an unanswered attempt consumes nothing.
        for _ in 0..<5 where answer == nil { answer = third.response() }
        XCTAssertEqual(answer?.status, 200, "served once one of the first two closed")
        XCTAssertTrue(answer?.body.contains("/third") == true)
    }
}
