import Foundation
import TestSupport
import TokenManager
import XCTest

/// Shared steps of the client-authentication flow tests: a proxy whose one route `api.test`
/// injects the token of credential `flow`, configured by the lines the test gives.
enum ClientAuthHarness {
    /// The proxy config: credential `flow` made of `credentialLines` (indented under it),
    /// `tokenWait: 2s`, and the route to `backend`.
    static func yaml(_ credentialLines: String, backend: Backend, routeExtra: String = "") -> String {
        let indented = credentialLines.split(separator: "\n").map { "    " + $0 }.joined(separator: "\n")
        return """
        listen: "127.0.0.1:0"
        credentials:
          flow:
        \(indented)
            tokenWait: 2s
        routes:
          - host: "api.test"
            upstream: "http://127.0.0.1:\(backend.port)"
            credential: flow
        \(routeExtra)
        """
    }

    /// Sends one GET for api.test and returns the response.
    static func get(_ proxy: ProxyHarness, path: String = "/secure", extraHeaders: String = "") throws -> TestResponse {
        let client = try RawClient(port: proxy.port)
        client.send("GET \(path) HTTP/1.1\r\nHost: api.test\r\n\(extraHeaders)\r\n")
        return try client.readResponse()
    }

    /// A request while no token can be had: 503 with `Retry-After` within `tokenWait` (2 s) plus slack.
    static func assertUnavailable(_ proxy: ProxyHarness, file: StaticString = #filePath, line: UInt = #line) throws {
        let started = Date()
        let response = try get(proxy)
        XCTAssertEqual(response.status, 503, file: file, line: line)
        XCTAssertNotNil(response.header("Retry-After"), file: file, line: line)
        XCTAssertNotNil(response.header("Proxy-Status"), file: file, line: line)
        XCTAssertLessThan(Date().timeIntervalSince(started), 3.5, "answered within tokenWait", file: file, line: line)
    }

    /// The credential's last fetch error, once it has one (bounded wait).
    static func lastError(_ proxy: ProxyHarness, timeout: TimeInterval = 5) -> String? {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            if let managed = proxy.runtime.credentials["flow"] as? ManagedCredential, let error = managed.status.lastError {
                return error
            }
            Thread.sleep(forTimeInterval: 0.05)
        }
        return nil
    }

    /// The form parameters of a request the authorization server logged.
    static func form(_ request: [String: Any]) -> [String: String] { request["form"] as? [String: String] ?? [:] }

    /// The JSON claims of a compact JWS (test-side decoding, no verification).
    static func claims(_ jws: String) -> [String: Any] { part(jws, 1) }

    /// The JSON header of a compact JWS.
    static func header(_ jws: String) -> [String: Any] { part(jws, 0) }

    private static func part(_ jws: String, _ index: Int) -> [String: Any] {
        let parts = jws.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3 else { return [:] }
        var text = parts[index].replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while text.count % 4 != 0 { text += "=" }
        guard let data = Data(base64Encoded: text) else { return [:] }
        return (try? JSONSerialization.jsonObject(with: data)) as? [String: Any] ?? [:]
    }
}
