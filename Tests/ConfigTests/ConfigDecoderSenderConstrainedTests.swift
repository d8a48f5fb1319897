import Config
import Foundation
import XCTest

/// Sender-constrained tokens in the configuration: `dpop` on oauth2 credentials,
/// `auth: self_signed_tls_client_auth`, and `clientCertificate: credential` on routes — decoded,
/// refused with the key named, rendered so that the rendering loads back.
final class ConfigDecoderSenderConstrainedTests: XCTestCase {
    private var mtls = ""
    private var caFile = ""

    override func setUpWithError() throws {
        let key = try writeTemporaryFile(self, "client.key", FakePEM.key)
        let cert = try writeTemporaryFile(self, "client.pem", FakePEM.certificate)
        caFile = cert
        mtls = "  bank:\n    type: oauth2\n    tokenUrl: https://as.test/token\n    clientId: gw\n    auth: tls_client_auth\n"
            + "    clientCert: \(cert)\n    clientKey: \(key)\n"
    }

    private func dpop(_ value: String) -> String {
        "credentials:\n  bank:\n    type: oauth2\n    tokenUrl: https://as.test/token\n    clientId: gw\n    secret: s\n    dpop: \(value)\n"
    }

    private func oauth(_ credentials: SidecarConfig?) -> OAuth2Config? {
        guard case .oauth2(let oauth)? = credentials?.credentials.first?.kind else { return nil }
        return oauth
    }

    func testDPoPIsAGeneratedKeyAKeyFileOrOff() throws {
        XCTAssertEqual(oauth(parseOK(dpop("true")))?.dpop, .generated)
        XCTAssertEqual(oauth(parseOK(dpop("false")))?.dpop, nil)
        XCTAssertEqual(oauth(parseOK(dpop("{keyFile: /keys/dpop.pem}")))?.dpop, .keyFile("/keys/dpop.pem"))
        let config = try XCTUnwrap(parseOK(dpop("{keyFile: /keys/dpop.pem}")))
        let rendered = config.renderEffective()
        XCTAssertTrue(rendered.contains("    dpop:\n      keyFile: \"/keys/dpop.pem\""), rendered)
        XCTAssertEqual(oauth(parseOK(rendered, environment: ["S": "s"]))?.dpop, .keyFile("/keys/dpop.pem"), "the rendering loads back")
        let generated = try XCTUnwrap(parseOK(dpop("true")))
        XCTAssertEqual(oauth(parseOK(generated.renderEffective()))?.dpop, .generated)
    }

    func testDPoPMistakesNameTheirKey() {
        let word = problemLines(dpop("yes please"))
        XCTAssertTrue(word.contains { $0.contains("credentials.bank.dpop") && $0.contains("true or false") }, "\(word)")
        let missing = problemLines(dpop("{}"))
        XCTAssertTrue(missing.contains { $0.contains("credentials.bank.dpop.keyFile") && $0.contains("required") }, "\(missing)")
        let typo = problemLines(dpop("{keyfile: /k.pem}"))
        XCTAssertTrue(typo.contains { $0.contains("keyfile") && $0.contains("keyFile") }, "\(typo)")
        let empty = problemLines(dpop("{keyFile: \"\"}"))
        XCTAssertTrue(empty.contains { $0.contains("dpop.keyFile") && $0.contains("empty") }, "\(empty)")
    }

    func testSelfSignedTLSClientAuthNeedsACertificateAndHTTPS() throws {
        let selfSigned = mtls.replacingOccurrences(of: "tls_client_auth", with: "self_signed_tls_client_auth")
        XCTAssertEqual(oauth(parseOK("credentials:\n" + selfSigned))?.auth, .selfSignedTLSClientAuth)
        let noCertificate = problemLines("credentials:\n  bank:\n    type: oauth2\n    tokenUrl: https://as.test/token\n    clientId: gw\n    auth: self_signed_tls_client_auth\n")
        XCTAssertTrue(noCertificate.contains { $0.contains("self_signed_tls_client_auth needs clientCert and clientKey") }, "\(noCertificate)")
        let plain = problemLines("credentials:\n" + selfSigned.replacingOccurrences(of: "https://as.test", with: "http://as.test"))
        XCTAssertTrue(plain.contains { $0.contains("needs an https:// tokenUrl") }, "\(plain)")
    }

    func testARoutePresentsTheCredentialsCertificate() throws {
        let config = try XCTUnwrap(parseOK("credentials:\n" + mtls + """
        routes:
          - host: accounts.local
            upstream: https://api.bank.test
            caFile: \(caFile)
            credential: bank
            clientCertificate: credential
        """))
        XCTAssertEqual(config.routes.first?.presentsCredentialCertificate, true)
        let rendered = config.renderEffective()
        XCTAssertTrue(rendered.contains("    clientCertificate: credential"), rendered)
        XCTAssertEqual(try XCTUnwrap(parseOK(rendered)).routes, config.routes)
    }

    func testClientCertificateMistakesNameTheirKey() {
        func problems(_ route: String, credentials: String? = nil) -> [String] {
            problemLines("credentials:\n" + (credentials ?? mtls) + "  other: {type: oauth2, tokenUrl: https://as.test/t, clientId: x, secret: s}\nroutes:\n  - host: accounts.local\n" + route)
        }
        let value = problems("    upstream: https://api.test\n    credential: bank\n    clientCertificate: mine\n")
        XCTAssertTrue(value.contains { $0.contains("routes[0].clientCertificate") && $0.contains("credential") }, "\(value)")
        let none = problems("    upstream: https://api.test\n    clientCertificate: credential\n")
        XCTAssertTrue(none.contains { $0.contains("routes[0].clientCertificate") && $0.contains("needs the route's credential") }, "\(none)")
        let secret = problems("    upstream: https://api.test\n    credential: other\n    clientCertificate: credential\n")
        XCTAssertTrue(secret.contains { $0.contains("'other' does not authenticate with a client certificate") }, "\(secret)")
        let clear = problems("    upstream: http://api.test\n    credential: bank\n    clientCertificate: credential\n")
        XCTAssertTrue(clear.contains { $0.contains("the upstream must be https://") }, "\(clear)")
        let both = problems("    upstream: https://api.test\n    credential: bank\n    clientCertificate: credential\n    clientCert: /c.pem\n    clientKey: /k.pem\n")
        XCTAssertTrue(both.contains { $0.contains("also sets clientCert and clientKey") }, "\(both)")
    }
}
