import Foundation
import TestSupport
import XCTest

/// Bodies both ways, framings, interim responses, and failures mid-stream.
final class StreamingTests: XCTestCase {
    private func pattern(_ size: Int) -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: size)
        var x: UInt32 = 2463534242
        for i in 0..<size { x ^= x << 13; x ^= x >> 17; x ^= x << 5; bytes[i] = UInt8(truncatingIfNeeded: x) }
        return bytes
    }

    func testUploadsWithContentLengthAndChunkedArriveIntact() throws {
        let backend = try Backend()
        let proxy = try ProxyHarness(yaml: ProxyHarness.yaml(backendPort: backend.port))
        let body = pattern(3 * 1024 * 1024 + 17)
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("upload-\(UUID().uuidString)")
        try Data(body).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        let url = "http://api.test/upload"
        let cl = try Curl.run(["-x", "http://127.0.0.1:\(proxy.port)", "--data-binary", "@\(file.path)", url])
        XCTAssertEqual(cl.status, 0, cl.err)
        let chunked = try Curl.run(["-x", "http://127.0.0.1:\(proxy.port)", "-H", "Transfer-Encoding: chunked",
                                    "--data-binary", "@\(file.path)", url])
        XCTAssertEqual(chunked.status, 0, chunked.err)
        let expected = sha256Hex(body)
        let requests = backend.requests()
        XCTAssertEqual(requests.count, 2)
        for request in requests {
            XCTAssertEqual(request["body_len"] as? Int, body.count)
            XCTAssertEqual(request["body_sha256"] as? String, expected)
        }
    }

    func testDownloadsInEveryFramingArriveIntact() throws {
        let backend = try Backend()
        let proxy = try ProxyHarness(yaml: ProxyHarness.yaml(backendPort: backend.port))
        let size = 5 * 1024 * 1024 + 3
        let client = try RawClient(port: proxy.port)
        client.send("GET /download-sha?size=\(size) HTTP/1.1\r\nHost: api.test\r\n\r\n")
        let expected = try client.readResponse().text.trimmingCharacters(in: .whitespacesAndNewlines)
        for mode in ["cl", "chunked", "close"] {
            client.send("GET /download?size=\(size)&mode=\(mode) HTTP/1.1\r\nHost: api.test\r\n\r\n")
            let response = try client.readResponse()
            XCTAssertEqual(response.status, 200, mode)
            XCTAssertEqual(response.body.count, size, mode)
            XCTAssertTrue(expected.contains(sha256Hex(response.body)), "\(mode): digest mismatch")
            if mode == "close" {
                // A close-delimited body is re-framed as chunked for an HTTP/1.1 client, so the
                // client connection survives.
                XCTAssertEqual(response.header("Transfer-Encoding"), "chunked")
            }
        }
    }

    func testHTTP10ClientGetsCloseDelimitedBodyForChunkedResponse() throws {
        let backend = try Backend()
        let proxy = try ProxyHarness(yaml: ProxyHarness.yaml(backendPort: backend.port))
        let client = try RawClient(port: proxy.port)
        client.send("GET /download?size=100000&mode=chunked HTTP/1.0\r\nHost: api.test\r\n\r\n")
        let response = try client.readResponse()
        XCTAssertNil(response.header("Transfer-Encoding"))
        XCTAssertEqual(response.body.count, 100000)
    }

    func testUpstreamFailingMidResponseTruncatesTheClientTransfer() throws {
        let backend = try Backend()
        let proxy = try ProxyHarness(yaml: ProxyHarness.yaml(backendPort: backend.port))
        let client = try RawClient(port: proxy.port)
        client.send("GET /truncate?size=200000 HTTP/1.1\r\nHost: api.test\r\n\r\n")
        XCTAssertThrowsError(try client.readResponse(), "a truncated body must not look complete")
        XCTAssertTrue(client.peerClosed)
    }

    func testClientDisconnectMidRequestAbortsTheUpstreamRequest() throws {
        let backend = try Backend()
        let proxy = try ProxyHarness(yaml: ProxyHarness.yaml(backendPort: backend.port))
        do {
            let client = try RawClient(port: proxy.port)
            // More than the 64 KiB collected before a connection is taken: the body is streaming.
            client.send("POST /upload HTTP/1.1\r\nHost: api.test\r\nContent-Length: 1000000\r\n\r\n" + String(repeating: "x", count: 100_000))
            Thread.sleep(forTimeInterval: 0.2)
        } // client closed here
        let deadline = Date().addingTimeInterval(5)
        while Date() < deadline && !backend.events().contains(where: { $0["event"] as? String == "close" }) {
            Thread.sleep(forTimeInterval: 0.05)
        }
        XCTAssertTrue(backend.events().contains { $0["event"] as? String == "close" }, "upstream connection must be closed")
        XCTAssertEqual(backend.requests().count, 0, "the partial request must never complete at the backend")
    }

    func testClientDisconnectWhileItsBodyIsCollectedReachesNoBackend() throws {
        let backend = try Backend()
        let proxy = try ProxyHarness(yaml: ProxyHarness.yaml(backendPort: backend.port))
        do {
            let client = try RawClient(port: proxy.port)
            // Under the 64 KiB collected before a backend connection is taken.
            client.send("POST /upload HTTP/1.1\r\nHost: api.test\r\nContent-Length: 1000000\r\n\r\n" + String(repeating: "x", count: 1000))
            Thread.sleep(forTimeInterval: 0.2)
        } // client closed here
        // The session is gone (its descriptor released) and nothing reached the backend.
        let deadline = Date().addingTimeInterval(5)
        while Date() < deadline && proxy.metrics().clientConnections > 0 { Thread.sleep(forTimeInterval: 0.05) }
        XCTAssertEqual(proxy.metrics().clientConnections, 0)
        XCTAssertEqual(backend.connections().count, 0, "a body that never completed opened no backend connection")
        XCTAssertEqual(backend.requests().count, 0)
        // And the proxy serves the next client normally.
        let next = try RawClient(port: proxy.port)
        next.send("POST /upload HTTP/1.1\r\nHost: api.test\r\nContent-Length: 5\r\n\r\nhello")
        XCTAssertEqual(try next.readResponse().json?["body_len"] as? Int, 5)
    }

    func testExpectContinueIsForwarded() throws {
        let backend = try Backend()
        let proxy = try ProxyHarness(yaml: ProxyHarness.yaml(backendPort: backend.port))
        let client = try RawClient(port: proxy.port)
        client.send("POST /continue HTTP/1.1\r\nHost: api.test\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\n")
        let interim = try client.readResponse(interim: true)
        XCTAssertEqual(interim.status, 100)
        client.send("hello")
        let final = try client.readResponse()
        XCTAssertEqual(final.status, 200)
        XCTAssertEqual(final.json?["body_len"] as? Int, 5)
    }

    func testHeadAnd204HaveNoBody() throws {
        let backend = try Backend()
        let proxy = try ProxyHarness(yaml: ProxyHarness.yaml(backendPort: backend.port))
        let client = try RawClient(port: proxy.port)
        client.send("HEAD /h HTTP/1.1\r\nHost: api.test\r\n\r\n")
        XCTAssertEqual(try client.readResponse(head: true).status, 200)
        client.send("GET /status/204 HTTP/1.1\r\nHost: api.test\r\n\r\n")
        XCTAssertEqual(try client.readResponse().status, 204)
        client.send("GET /after HTTP/1.1\r\nHost: api.test\r\n\r\n")
        XCTAssertEqual(try client.readResponse().json?["target"] as? String, "/after")
    }
}

func sha256Hex(_ bytes: [UInt8]) -> String {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
    process.arguments = ["sha256sum"]
    let input = Pipe(), output = Pipe()
    process.standardInput = input
    process.standardOutput = output
    try? process.run()
    input.fileHandleForWriting.write(Data(bytes))
    try? input.fileHandleForWriting.close()
    let out = output.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    return String(String(decoding: out, as: UTF8.self).prefix(64))
}
