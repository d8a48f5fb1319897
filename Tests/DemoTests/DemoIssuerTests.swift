import Admin
import Demo
import EventLoop
import Foundation
import TestSupport
import XCTest

final class DemoIssuerTests: XCTestCase {
    private var thread: ServerThread?
    private let registry = DemoTokenRegistry()
    private let clientID = "demo client"
    private let secret = "s3cr:t+/=%"

    override func tearDown() {
        thread?.stop()
        thread = nil
    }

    private func startIssuer() throws -> Int {
        let registry = self.registry, clientID = self.clientID, secret = self.secret
        let thread = try ServerThread { loop in
            [try DemoIssuer(address: loopback, loop: loop, clientID: clientID, clientSecret: secret,
                            expiresIn: 90, registry: registry)]
        }
        try thread.start()
        self.thread = thread
        return thread.addresses[0].port
    }

    /// RFC 6749 §2.3.1: form-urlencode id and secret, join with ':', base64.
    private func basic(_ id: String, _ secret: String) -> String {
        func encode(_ text: String) -> String {
            var allowed = CharacterSet.alphanumerics
            allowed.insert(charactersIn: "-._~")
            return text.addingPercentEncoding(withAllowedCharacters: allowed)!
        }
        return "Basic " + Data("\(encode(id)):\(encode(secret))".utf8).base64EncodedString()
    }

    private func form(_ pairs: [(String, String)]) -> [UInt8] {
        var allowed = CharacterSet.alphanumerics
        allowed.insert(charactersIn: "-._~")
        return Array(pairs.map { "\($0.0)=\($0.1.addingPercentEncoding(withAllowedCharacters: allowed)!)" }
            .joined(separator: "&").utf8)
    }

    private let formType = ("Content-Type", "application/x-www-form-urlencoded")

    func testClientSecretBasic() throws {
        let port = try startIssuer()
        let response = try fetch(port: port, "/oauth/token", method: "POST",
                                 headers: [("Authorization", basic(clientID, secret)), formType],
                                 body: form([("grant_type", "client_credentials")]))
        XCTAssertEqual(response.status, 200)
        XCTAssertEqual(response.header("Cache-Control"), "no-store")
        let object = try XCTUnwrap(response.json)
        let token = try XCTUnwrap(object["access_token"] as? String)
        XCTAssertTrue(token.hasPrefix("demo-"))
        XCTAssertEqual(token.count, 5 + 32)
        XCTAssertEqual(object["token_type"] as? String, "Bearer")
        XCTAssertEqual(object["expires_in"] as? Int, 90)
        XCTAssertTrue(registry.isValid(token))
        XCTAssertFalse(registry.isValid(token, now: .now + .seconds(91)), "expires after expires_in")
        XCTAssertEqual(registry.issuedCount, 1)
    }

    func testBasicCredentialsWithoutPaddingOrMalformedBase64() throws {
        let port = try startIssuer()
        let unpadded = basic(clientID, secret).replacingOccurrences(of: "=", with: "")
        for (authorization, status) in [(unpadded, 200), ("Basic ab!c", 401), ("Basic a", 401), ("Bearer x", 401)] {
            let response = try fetch(port: port, "/oauth/token", method: "POST",
                                     headers: [("Authorization", authorization), formType],
                                     body: form([("grant_type", "client_credentials")]))
            XCTAssertEqual(response.status, status, authorization)
        }
    }

    func testClientSecretPost() throws {
        let port = try startIssuer()
        let response = try fetch(port: port, "/oauth/token", method: "POST", headers: [formType],
                                 body: form([("grant_type", "client_credentials"),
                                             ("client_id", clientID), ("client_secret", secret)]))
        XCTAssertEqual(response.status, 200)
        let token = try XCTUnwrap(response.json?["access_token"] as? String)
        XCTAssertTrue(registry.isValid(token))
    }

    func testWrongSecretIsInvalidClient() throws {
        let port = try startIssuer()
        let viaBasic = try fetch(port: port, "/oauth/token", method: "POST",
                                 headers: [("Authorization", basic(clientID, "wrong")), formType],
                                 body: form([("grant_type", "client_credentials")]))
        XCTAssertEqual(viaBasic.status, 401)
        XCTAssertEqual(viaBasic.json?["error"] as? String, "invalid_client")
        XCTAssertEqual(viaBasic.header("WWW-Authenticate"), #"Basic realm="token-sidecar-demo""#)
        let viaPost = try fetch(port: port, "/oauth/token", method: "POST", headers: [formType],
                                body: form([("grant_type", "client_credentials"),
                                            ("client_id", clientID), ("client_secret", secret + "x")]))
        XCTAssertEqual(viaPost.status, 401)
        XCTAssertEqual(viaPost.json?["error"] as? String, "invalid_client")
        let anonymous = try fetch(port: port, "/oauth/token", method: "POST", headers: [formType],
                                  body: form([("grant_type", "client_credentials")]))
        XCTAssertEqual(anonymous.status, 401)
        let garbage = try fetch(port: port, "/oauth/token", method: "POST",
                                headers: [("Authorization", "Basic !!!"), formType],
                                body: form([("grant_type", "client_credentials")]))
        XCTAssertEqual(garbage.status, 401)
        XCTAssertEqual(registry.issuedCount, 0)
    }

    func testOtherGrantsAndBadRequests() throws {
        let port = try startIssuer()
        let password = try fetch(port: port, "/oauth/token", method: "POST",
                                 headers: [("Authorization", basic(clientID, secret)), formType],
                                 body: form([("grant_type", "password")]))
        XCTAssertEqual(password.status, 400)
        XCTAssertEqual(password.json?["error"] as? String, "unsupported_grant_type")
        let noGrant = try fetch(port: port, "/oauth/token", method: "POST",
                                headers: [("Authorization", basic(clientID, secret)), formType], body: [])
        XCTAssertEqual(noGrant.json?["error"] as? String, "invalid_request")
        let both = try fetch(port: port, "/oauth/token", method: "POST",
                             headers: [("Authorization", basic(clientID, secret)), formType],
                             body: form([("grant_type", "client_credentials"),
                                         ("client_id", clientID), ("client_secret", secret)]))
        XCTAssertEqual(both.status, 400)
        XCTAssertEqual(both.json?["error"] as? String, "invalid_request")
        XCTAssertEqual(try fetch(port: port, "/oauth/token").status, 405)
        XCTAssertEqual(try fetch(port: port, "/elsewhere", method: "POST").status, 404)
        XCTAssertEqual(registry.issuedCount, 0)
    }
}
