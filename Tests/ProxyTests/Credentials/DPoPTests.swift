import Foundation
import TestSupport
import TokenManager
import XCTest

/// DPoP (RFC 9449) end to end against an authorization server and a resource server that verify
/// like real ones (Fixtures/dpop_server.py): the token is bound to the sidecar's key, and every
/// forwarded request carries a fresh proof the resource server checks — signature against the
/// header's `jwk`, `typ`, `htm`, `htu`, `iat`, a `jti` never seen before, `ath`, and the key's
/// thumbprint against the token's `cnf.jkt`; nonces at both servers.
final class DPoPTests: XCTestCase {
    private static var client: [String: Any] { ["client_id": "bank-client", "client_secret": "s3cret-dpop", "require_dpop": true] }

    private func yaml(_ server: DPoPServer, dpop: String = "true", backendURL: String? = nil) -> String {
        """
        listen: "127.0.0.1:0"
        credentials:
          bank:
            type: oauth2
            tokenUrl: "\(server.tokenURL)"
            clientId: bank-client
            secret: s3cret-dpop
            dpop: \(dpop)
            tokenWait: 3s
        routes:
          - host: "accounts.test"
            upstream: "\(backendURL ?? server.backendURL)"
            credential: bank
        """
    }

    private func get(_ client: RawClient, _ path: String) throws -> TestResponse {
        client.send("GET \(path) HTTP/1.1\r\nHost: accounts.test\r\n\r\n")
        return try client.readResponse()
    }

    private func json(_ response: TestResponse) -> [String: Any] {
        (try? JSONSerialization.jsonObject(with: Data(response.body))) as? [String: Any] ?? [:]
    }

    func testAThousandRequestsOfEveryShapeAllCarryAProofTheResourceServerVerifies() throws {
        let server = try DPoPServer(policy: Self.client)
        let proxy = try ProxyHarness(yaml: yaml(server))
        let clients = try (0..<4).map { _ in try RawClient(port: proxy.port) }
        var sent = 0
        var bodies = 0
        for round in 0..<50 {
            for (index, client) in clients.enumerated() {
                switch (round + index) % 4 {
                case 0:
                    // Keep-alive GETs with a query (not part of htu) and an app-supplied DPoP
                    // header (a second proof would be refused: only the sidecar's goes).
                    for step in 0..<5 {
                        client.send("GET /accounts/\(round)?page=\(step) HTTP/1.1\r\nHost: accounts.test\r\nDPoP: app-proof\r\n\r\n")
                        let response = try client.readResponse()
                        XCTAssertEqual(response.status, 200, String(decoding: response.body, as: UTF8.self))
                        XCTAssertEqual(json(response)["bound"] as? String, "dpop")
                        sent += 1
                    }
                case 1:
                    // POSTs with bodies, Content-Length and chunked.
                    for step in 0..<5 {
                        let body = String(repeating: "x", count: 100 * (step + 1))
                        if step % 2 == 0 {
                            client.send("POST /transfers HTTP/1.1\r\nHost: accounts.test\r\nContent-Length: \(body.utf8.count)\r\n\r\n\(body)")
                        } else {
                            let size = String(body.utf8.count, radix: 16)
                            client.send("POST /transfers HTTP/1.1\r\nHost: accounts.test\r\nTransfer-Encoding: chunked\r\n\r\n\(size)\r\n\(body)\r\n0\r\n\r\n")
                        }
                        let response = try client.readResponse()
                        XCTAssertEqual(response.status, 200)
                        XCTAssertEqual(json(response)["body_length"] as? Int, body.utf8.count)
                        XCTAssertEqual(json(response)["method"] as? String, "POST")
                        sent += 1
                        bodies += 1
                    }
                default:
                    // Five pipelined requests in one write.
                    let batch = (0..<5).map { "GET /balances/\(round)/\($0) HTTP/1.1\r\nHost: accounts.test\r\n\r\n" }.joined()
                    client.send(batch)
                    for step in 0..<5 {
                        let response = try client.readResponse()
                        XCTAssertEqual(response.status, 200)
                        XCTAssertEqual(json(response)["path"] as? String, "/balances/\(round)/\(step)", "in order")
                        sent += 1
                    }
                }
            }
        }
        XCTAssertEqual(sent, 1000)
        let resource = server.waitForResourceRequests(1000)
        XCTAssertEqual(resource.count, 1000, "no request was sent twice")
        XCTAssertTrue(resource.allSatisfy { $0["verdict"] as? String == "ok" && $0["scheme"] as? String == "DPoP" })
        XCTAssertEqual(Set(resource.compactMap { $0["proof_jti"] as? String }).count, 1000, "a fresh proof per request")
        let tokens = server.tokenRequests()
        XCTAssertEqual(tokens.count, 1, "one token for all of them")
        XCTAssertEqual(tokens.first?["token_type"] as? String, "DPoP")
        let jkt = try XCTUnwrap(tokens.first?["jkt"] as? String)
        XCTAssertTrue(resource.allSatisfy { $0["jkt"] as? String == jkt && $0["token_jkt"] as? String == jkt })
        XCTAssertTrue(resource.filter { ($0["proof_htu"] as? String)?.contains("?") == true }.isEmpty, "htu has no query")
        XCTAssertEqual(bodies, 250)
    }

    func testANonceDemandedMidRunCostsOneRetryThenNone() throws {
        let server = try DPoPServer(policy: Self.client)
        let proxy = try ProxyHarness(yaml: yaml(server))
        let client = try RawClient(port: proxy.port)
        for index in 0..<20 { XCTAssertEqual(try get(client, "/a/\(index)").status, 200) }
        var policy = Self.client
        policy["rs_nonce"] = "rs-nonce-1"
        try server.setPolicy(policy)
        for index in 0..<20 {
            // A POST with a body: the replay sends it whole.
            client.send("POST /b/\(index) HTTP/1.1\r\nHost: accounts.test\r\nContent-Length: 5\r\n\r\nhello")
            let response = try client.readResponse()
            XCTAssertEqual(response.status, 200, "request \(index)")
            XCTAssertEqual(json(response)["body_length"] as? Int, 5)
        }
        let resource = server.waitForResourceRequests(41)
        XCTAssertEqual(resource.count, 41, "20 + the first after the change twice + 19")
        let challenged = resource.filter { $0["error"] as? String == "use_dpop_nonce" }
        XCTAssertEqual(challenged.count, 1)
        XCTAssertEqual(resource[20]["error"] as? String, "use_dpop_nonce")
        XCTAssertEqual(resource[21]["nonce_sent"] as? String, "rs-nonce-1")
        XCTAssertTrue(resource[21...].allSatisfy { $0["verdict"] as? String == "ok" })
        XCTAssertEqual(server.tokenRequests().count, 1, "a nonce challenge is not a rejected token")
    }

    func testARotatingNonceGetsAtMostOneRetryPerRequestAndNeverALoop() throws {
        var policy = Self.client
        policy["rs_nonce_every_request"] = true
        let server = try DPoPServer(policy: policy)
        let proxy = try ProxyHarness(yaml: yaml(server))
        // Two clients interleaved: each response's new nonce is stale for the other's next request.
        let clients = try (0..<2).map { _ in try RawClient(port: proxy.port) }
        for round in 0..<15 {
            for client in clients {
                client.send("GET /r/\(round) HTTP/1.1\r\nHost: accounts.test\r\n\r\n")
            }
            for client in clients {
                let response = try client.readResponse()
                XCTAssertTrue([200, 401].contains(response.status))
            }
        }
        let resource = server.waitForResourceRequests(30)
        XCTAssertLessThanOrEqual(resource.count, 60, "at most one retry per request")
        XCTAssertGreaterThan(resource.filter { $0["verdict"] as? String == "ok" }.count, 0)
    }

    func testAServerThatChallengesEveryRequestGetsOneRetryAndTheAppItsAnswer() throws {
        let server = try DPoPServer(policy: Self.client)
        let backend = try MisbehavingBackend()
        let proxy = try ProxyHarness(yaml: yaml(server, backendURL: "http://127.0.0.1:\(backend.port)"))
        let client = try RawClient(port: proxy.port)
        for index in 0..<3 {
            let response = try get(client, "/dpop-nonce-always")
            XCTAssertEqual(response.status, 401, "request \(index): the server's own answer, after one retry")
            XCTAssertTrue(response.header("WWW-Authenticate")?.contains("use_dpop_nonce") == true)
        }
        XCTAssertEqual(backend.requests(path: "/dpop-nonce-always").count, 6, "two upstream requests per request, never more")
        XCTAssertEqual(server.tokenRequests().count, 1, "the token was never treated as rejected")
    }

    func testTheTokenServersNonceIsAnsweredOnceAndKept() throws {
        var policy = Self.client
        policy["as_nonce"] = "as-nonce-7"
        let server = try DPoPServer(policy: policy)
        let proxy = try ProxyHarness(yaml: yaml(server))
        let client = try RawClient(port: proxy.port)
        XCTAssertEqual(try get(client, "/x").status, 200)
        let tokens = server.tokenRequests()
        XCTAssertEqual(tokens.count, 2, "one challenge, one retry")
        XCTAssertEqual(tokens.first?["error"] as? String, "use_dpop_nonce")
        XCTAssertEqual(tokens.last?["nonce_sent"] as? String, "as-nonce-7")
        XCTAssertEqual(tokens.last?["verdict"] as? String, "ok")
        XCTAssertEqual(proxy.runtime.credentials["bank"]?.currentToken()?.scheme, "DPoP")
    }

    private func ecKey() throws -> [UInt8] {
        let result = try Command.run(["openssl", "genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256"])
        return Array(result.out.utf8)
    }

    func testARotatedKeyFileGetsATokenBoundToTheNewKeyAndNoRequestFails() throws {
        let server = try DPoPServer(policy: Self.client)
        let volume = try ProjectedVolume()
        try volume.publish(["dpop.pem": try ecKey()])
        let proxy = try ProxyHarness(yaml: yaml(server, dpop: "{keyFile: \"\(volume.path("dpop.pem"))\"}"))
        let client = try RawClient(port: proxy.port)
        XCTAssertEqual(try get(client, "/before").status, 200)
        let firstKey = try XCTUnwrap(server.tokenRequests().last?["jkt"] as? String)
        try volume.publish(["dpop.pem": try ecKey()])
        // Requests keep flowing across the rotation: the old token with its old key until the
        // new token (bound to the new key) is current.
        let during = try server.keepRequesting(client, host: "accounts.test", untilTokens: 2)
        for (index, response) in during.enumerated() {
            XCTAssertEqual(response.status, 200, "request \(index) across the rotation: \(String(decoding: response.body, as: UTF8.self))")
        }
        let tokens = server.tokenRequests()
        XCTAssertEqual(tokens.count, 2, "a new token for the new key, within a few seconds")
        let secondKey = try XCTUnwrap(tokens.last?["jkt"] as? String)
        XCTAssertNotEqual(firstKey, secondKey)
        for step in 0..<5 { XCTAssertEqual(try get(client, "/after/\(step)").status, 200) }
        let after = server.resourceRequests().suffix(5)
        XCTAssertTrue(after.allSatisfy { $0["jkt"] as? String == secondKey && $0["token_jkt"] as? String == secondKey },
                      "requests after the rotation prove the new key with the new token")
        XCTAssertTrue(server.resourceRequests().allSatisfy { $0["verdict"] as? String == "ok" })
    }

    /// The verifying DPoP authorization and resource server (Fixtures/dpop_server.py) must refuse
    /// what a real one refuses — bad signatures, replayed or stale proofs, wrong `htm`/`htu`/`ath`,
    /// another key, missing nonces, the wrong client certificate — or the tests above could pass
    /// for the wrong reason. Its self-test runs with them.
    func testTheVerifyingDPoPServerAcceptsGoodAndRefusesBadProofs() throws {
        try assertFixtureSelfTestPasses("dpop_server_selftest.py")
    }
}
