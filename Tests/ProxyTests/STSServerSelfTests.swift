import Foundation
import XCTest

/// The verifying STS must refuse what a real one refuses, or every token-exchange test could
/// pass for the wrong reason: its own self-test (Fixtures/sts_server_selftest.py: signatures,
/// expiry, issuer, audience, client authentication, logs without raw tokens) runs here so CI
/// runs it, and the Swift wrapper is exercised once end to end.
final class STSServerSelfTests: XCTestCase {
    func testTheVerifyingSTSAcceptsGoodAndRefusesBadExchanges() throws {
        try assertFixtureSelfTestPasses("sts_server_selftest.py")
    }

    func testTheWrapperMintsExchangesAndReadsBothLogs() throws {
        let sts = try STSServer(policy: ["client_auth": "client_secret_post", "client_id": "app", "client_secret": "s3cret",
                                         "allowed_audiences": ["https://api.test"]])
        XCTAssertNotEqual(sts.port, sts.backendPort)
        let subject = try sts.mint(subject: "alice", ttl: 300)
        let exchanged = try Curl.run(["--data-urlencode", "grant_type=\(STSServer.grantType)",
                                      "--data-urlencode", "subject_token=\(subject)",
                                      "--data-urlencode", "subject_token_type=\(STSServer.jwtTokenType)",
                                      "--data-urlencode", "audience=https://api.test",
                                      "--data-urlencode", "scope=read write",
                                      "--data-urlencode", "client_id=app", "--data-urlencode", "client_secret=s3cret",
                                      sts.tokenURL])
        let document = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(exchanged.out.utf8)) as? [String: Any],
                                     exchanged.out + exchanged.err)
        let token = try XCTUnwrap(document["access_token"] as? String, exchanged.out)
        XCTAssertEqual(document["issued_token_type"] as? String, STSServer.accessTokenType)
        XCTAssertEqual(document["token_type"] as? String, "Bearer")

        let answer = try Curl.run(["-H", "Authorization: Bearer \(token)", "-H", "Token-Sidecar-Probe: 1",
                                   "\(sts.backendURL)/data"])
        let seen = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(answer.out.utf8)) as? [String: Any],
                                 answer.out + answer.err)
        XCTAssertEqual(seen["sub"] as? String, "alice")
        XCTAssertEqual(seen["aud"] as? String, "https://api.test")
        XCTAssertEqual(seen["scope"] as? String, "read write")
        XCTAssertEqual(seen["path"] as? String, "/data")

        let tokenLog = sts.waitForTokenRequests(1)
        XCTAssertEqual(tokenLog.first?["verdict"] as? String, "ok")
        XCTAssertEqual(tokenLog.first?["sub"] as? String, "alice")
        let backendLog = sts.waitForBackendRequests(1)
        XCTAssertEqual(backendLog.first?["known"] as? Bool, true)
        XCTAssertEqual(backendLog.first?["authorization_scheme"] as? String, "Bearer")
        XCTAssertEqual(backendLog.first?["sidecar_headers"] as? [[String]], [["Token-Sidecar-Probe", "1"]])

        XCTAssertThrowsError(try sts.mint(subject: "bob", ttl: 60, kind: "nonsense"))
        for name in ["token_requests.jsonl", "backend_requests.jsonl"] {
            let text = try String(contentsOf: sts.fixture.file(name), encoding: .utf8)
            XCTAssertFalse(text.contains(subject), name)
            XCTAssertFalse(text.contains(token), name)
            XCTAssertFalse(text.contains("s3cret"), name)
        }
    }
}
