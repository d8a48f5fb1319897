import Crypto
import EventLoop
import Foundation
import TestSupport
import TokenManager
import XCTest

/// `clientAuthorization: exchange` end to end against a verifying STS (Fixtures/sts_server.py:
/// client authentication, the subject's signature, issuer and expiry, the actor token, an
/// audience policy) and a backend that accepts only tokens that STS issued: each caller's
/// requests carry a token exchanged for that caller, never another's, never the subject.
final class STSTests: XCTestCase {
    private static var client: [String: Any] { ["client_id": "orders-proxy", "client_secret": "s3cret-for-sts", "allowed_audiences": ["orders"]] }

    private func yaml(_ sts: STSServer, tokenURL: String? = nil, exchange: String = "{audience: orders}", top: String = "") -> String {
        """
        listen: "127.0.0.1:0"
        \(top)
        credentials:
          sts:
            type: oauth2
            tokenUrl: "\(tokenURL ?? sts.tokenURL)"
            clientId: orders-proxy
            secret: s3cret-for-sts
            tokenWait: 3s
        routes:
          - host: "orders.test"
            upstream: "\(sts.backendURL)"
            credential: sts
            clientAuthorization: exchange
            exchange: \(exchange)
        """
    }

    private func get(_ client: RawClient, subject: String?, path: String = "/orders") throws -> TestResponse {
        let authorization = subject.map { "Authorization: Bearer \($0)\r\n" } ?? ""
        client.send("GET \(path) HTTP/1.1\r\nHost: orders.test\r\n\(authorization)\r\n")
        return try client.readResponse()
    }

    private func json(_ response: TestResponse) -> [String: Any] {
        (try? JSONSerialization.jsonObject(with: Data(response.body))) as? [String: Any] ?? [:]
    }

    private func exchanges(_ sts: STSServer) -> [[String: Any]] {
        sts.tokenRequests().filter { $0["grant_type"] as? String == STSServer.grantType }
    }

    private func fingerprint16(_ text: String) -> String { String(Digest.sha256Hex(text).prefix(16)) }

    func testThreeCallersHundredRequestsEachMakeThreeExchangesAndNeverMixTokens() throws {
        let sts = try STSServer(policy: Self.client)
        let proxy = try ProxyHarness(yaml: yaml(sts))
        let users = ["alice", "bob", "carol"]
        let subjects = try users.map { try sts.mint(subject: $0, ttl: 600) }
        let clients = try users.map { _ in try RawClient(port: proxy.port) }
        for round in 0..<100 {
            for (index, user) in users.enumerated() {
                let response = try get(clients[index], subject: subjects[index], path: "/orders/\(round)")
                XCTAssertEqual(response.status, 200, "\(user) round \(round)")
                XCTAssertEqual(json(response)["sub"] as? String, user, "the token exchanged for \(user), not another caller's")
                XCTAssertEqual(json(response)["aud"] as? String, "orders")
            }
        }
        let made = exchanges(sts)
        XCTAssertEqual(made.count, 3, "one exchange per caller")
        XCTAssertEqual(Set(made.compactMap { $0["sub"] as? String }), Set(users))
        XCTAssertTrue(made.allSatisfy { $0["verdict"] as? String == "ok" && $0["client_auth"] as? String == "basic" })
        let backend = sts.waitForBackendRequests(300)
        XCTAssertEqual(backend.count, 300)
        let subjectPrints = Set(subjects.map(fingerprint16))
        for entry in backend {
            XCTAssertEqual(entry["known"] as? Bool, true, "only tokens the STS issued reach the backend")
            XCTAssertFalse(subjectPrints.contains(entry["token_sha256"] as? String ?? ""), "the subject itself never reaches the upstream")
            XCTAssertEqual(entry["authorization_scheme"] as? String, "Bearer")
        }
    }

    func testConcurrentFirstRequestsOfOneCallerShareOneExchange() throws {
        var policy = Self.client
        policy["delay_ms"] = 300
        let sts = try STSServer(policy: policy)
        let proxy = try ProxyHarness(yaml: yaml(sts))
        let subject = try sts.mint(subject: "dave", ttl: 600)
        let statuses = Locked<[Int]>([])
        let port = proxy.port
        let request = "GET /orders HTTP/1.1\r\nHost: orders.test\r\nAuthorization: Bearer \(subject)\r\n\r\n"
        DispatchQueue.concurrentPerform(iterations: 100) { _ in
            var status = -1
            if let client = try? RawClient(port: port) {
                client.send(request)
                status = (try? client.readResponse().status) ?? -1
            }
            statuses.withLock { $0.append(status) }
        }
        XCTAssertEqual(statuses.withLock { $0 }.filter { $0 == 200 }.count, 100)
        XCTAssertEqual(exchanges(sts).count, 1, "single flight per caller")
    }

    func testAnExpiredSubjectIsNeverUsedAndANewOneIsExchanged() throws {
        let sts = try STSServer(policy: Self.client)
        let proxy = try ProxyHarness(yaml: yaml(sts))
        let client = try RawClient(port: proxy.port)
        let shortLived = try sts.mint(subject: "erin", ttl: 3)
        XCTAssertEqual(try get(client, subject: shortLived).status, 200)
        Thread.sleep(forTimeInterval: 3.3)
        let late = try get(client, subject: shortLived)
        XCTAssertEqual(late.status, 401, "an expired caller token is refused, not exchanged or served from cache")
        XCTAssertTrue(late.header("WWW-Authenticate")?.contains("invalid_token") == true)
        XCTAssertEqual(exchanges(sts).count, 1)
        let renewed = try sts.mint(subject: "erin", ttl: 600)
        let response = try get(try RawClient(port: proxy.port), subject: renewed)
        XCTAssertEqual(response.status, 200)
        XCTAssertEqual(exchanges(sts).count, 2, "the renewed subject is exchanged")
        XCTAssertTrue(sts.backendRequests().allSatisfy { $0["known"] as? Bool == true && $0["expired"] as? Bool != true },
                      "the backend never saw an expired token")
    }

    func testARefusedSubjectIs403AndNothingGoesUpstream() throws {
        var policy = Self.client
        policy["refuse_subjects"] = ["mallory"]
        let sts = try STSServer(policy: policy)
        let proxy = try ProxyHarness(yaml: yaml(sts))
        let refused = try get(try RawClient(port: proxy.port), subject: try sts.mint(subject: "mallory", ttl: 600))
        XCTAssertEqual(refused.status, 403)
        XCTAssertNotNil(refused.header("Proxy-Status"))
        XCTAssertEqual(json(refused)["token_error"] as? String, "invalid_grant")
        let forged = try get(try RawClient(port: proxy.port), subject: try sts.mint(subject: "oscar", ttl: 600, forged: true))
        XCTAssertEqual(forged.status, 403, "a subject the STS did not sign")
        XCTAssertEqual(json(forged)["token_error"] as? String, "invalid_grant")
        XCTAssertEqual(sts.backendRequests().count, 0, "nothing was forwarded")
    }

    func testAnAudienceTheSTSRefusesIs403WithInvalidTarget() throws {
        let sts = try STSServer(policy: Self.client)
        let proxy = try ProxyHarness(yaml: yaml(sts, exchange: "{audience: payments}"))
        let response = try get(try RawClient(port: proxy.port), subject: try sts.mint(subject: "alice", ttl: 600))
        XCTAssertEqual(response.status, 403)
        XCTAssertEqual(json(response)["token_error"] as? String, "invalid_target")
        XCTAssertEqual(sts.backendRequests().count, 0)
    }

    func testNoSubjectIs401WithAChallengeAndNothingIsFetchedOrForwarded() throws {
        let sts = try STSServer(policy: Self.client)
        let proxy = try ProxyHarness(yaml: yaml(sts))
        let client = try RawClient(port: proxy.port)
        let missing = try get(client, subject: nil)
        XCTAssertEqual(missing.status, 401)
        XCTAssertEqual(missing.header("WWW-Authenticate"), "Bearer")
        XCTAssertNotNil(missing.header("Proxy-Status"))
        client.send("GET / HTTP/1.1\r\nHost: orders.test\r\nAuthorization: Basic dXNlcjpwYXNz\r\n\r\n")
        let basic = try client.readResponse()
        XCTAssertEqual(basic.status, 401)
        XCTAssertTrue(basic.header("WWW-Authenticate")?.contains("invalid_request") == true)
        XCTAssertEqual(sts.tokenRequests().count, 0, "the credential's own token is never fetched")
        XCTAssertEqual(sts.backendRequests().count, 0)
    }

    func testAnUnreachableSTSIs503WithRetryAfter() throws {
        let sts = try STSServer(policy: Self.client)
        let closed = try Nginx.freePort()
        let proxy = try ProxyHarness(yaml: yaml(sts, tokenURL: "http://127.0.0.1:\(closed)/token"))
        let response = try get(try RawClient(port: proxy.port), subject: try sts.mint(subject: "alice", ttl: 600))
        XCTAssertEqual(response.status, 503)
        XCTAssertNotNil(response.header("Retry-After"))
        XCTAssertEqual(sts.backendRequests().count, 0)
    }

    func testAFailingSTSIsNotAskedAgainForEveryNewCallerDuringItsBackoff() throws {
        var policy = Self.client
        policy["fail_status"] = 503
        let sts = try STSServer(policy: policy)
        let proxy = try ProxyHarness(yaml: yaml(sts))
        let subjects = try ["alice", "bob", "carol", "dave"].map { try sts.mint(subject: $0, ttl: 600) }
        let first = try get(try RawClient(port: proxy.port), subject: subjects[0])
        XCTAssertEqual(first.status, 503)
        for subject in subjects.dropFirst() {
            let response = try get(try RawClient(port: proxy.port), subject: subject)
            XCTAssertEqual(response.status, 503)
            XCTAssertNotNil(response.header("Retry-After"))
        }
        XCTAssertEqual(sts.tokenRequests().count, 1, "one failing request, not one per caller")
    }

    func testABackend401IsReExchangedOnceAndReplayed() throws {
        var policy = Self.client
        policy["backend_reject_all"] = true
        let sts = try STSServer(policy: policy)
        let proxy = try ProxyHarness(yaml: yaml(sts))
        let client = try RawClient(port: proxy.port)
        client.send("POST /orders HTTP/1.1\r\nHost: orders.test\r\nAuthorization: Bearer \(try sts.mint(subject: "alice", ttl: 600))\r\nContent-Length: 5\r\n\r\nhello")
        let response = try client.readResponse()
        XCTAssertEqual(response.status, 401, "the backend keeps refusing: its 401 reaches the app")
        XCTAssertEqual(exchanges(sts).count, 2, "one fresh exchange for the 401")
        let backend = sts.waitForBackendRequests(2)
        XCTAssertEqual(backend.count, 2, "the request was replayed once")
        XCTAssertEqual(backend.map { $0["body_length"] as? Int }, [5, 5], "with its whole body")
        XCTAssertNotEqual(backend[0]["token_sha256"] as? String, backend[1]["token_sha256"] as? String)
    }

    func testAnActorTokenFromAFileMakesADelegation() throws {
        var policy = Self.client
        policy["require_actor"] = true
        let sts = try STSServer(policy: policy)
        let volume = try ProjectedVolume()
        try volume.publish(text: ["token": try sts.mint(subject: "system:serviceaccount:shop:orders", ttl: 600, kind: "actor")])
        let proxy = try ProxyHarness(yaml: yaml(sts, exchange: "{audience: orders, actorTokenFile: \"\(volume.path("token"))\"}"))
        let response = try get(try RawClient(port: proxy.port), subject: try sts.mint(subject: "alice", ttl: 600))
        XCTAssertEqual(response.status, 200)
        XCTAssertEqual(json(response)["sub"] as? String, "alice")
        XCTAssertEqual(json(response)["act"] as? String, "system:serviceaccount:shop:orders")
    }

    func testAFileSubjectGrantIsRefreshedAndFollowsARotatedFile() throws {
        var policy: [String: Any] = ["expires_in": 3]
        policy["client_auth"] = "none"
        let sts = try STSServer(policy: policy)
        let volume = try ProjectedVolume()
        try volume.publish(text: ["token": try sts.mint(subject: "workload-1", ttl: 600)])
        let proxy = try ProxyHarness(yaml: """
        listen: "127.0.0.1:0"
        credentials:
          federated:
            type: oauth2
            grant: token_exchange
            tokenUrl: "\(sts.tokenURL)"
            subjectTokenFile: "\(volume.path("token"))"
            audience: orders
            auth: none
            tokenWait: 3s
        routes:
          - host: "orders.test"
            upstream: "\(sts.backendURL)"
            credential: federated
        """)
        let client = try RawClient(port: proxy.port)
        XCTAssertEqual(json(try get(client, subject: nil))["sub"] as? String, "workload-1")
        let rotated = try sts.mint(subject: "workload-2", ttl: 600)
        try volume.publish(text: ["token": rotated])
        // The 3 s token is refreshed ahead of expiry: the next exchange reads the new file.
        let deadline = Date().addingTimeInterval(8)
        var sub: String?
        while Date() < deadline {
            sub = json(try get(client, subject: nil))["sub"] as? String
            if sub == "workload-2" { break }
            Thread.sleep(forTimeInterval: 0.2)
        }
        XCTAssertEqual(sub, "workload-2")
        let made = exchanges(sts)
        XCTAssertTrue(made.contains { $0["subject_sha256"] as? String == fingerprint16(rotated) })
        XCTAssertTrue(made.allSatisfy { $0["client_auth"] as? String == "none" && $0["verdict"] as? String == "ok" })
    }
}
