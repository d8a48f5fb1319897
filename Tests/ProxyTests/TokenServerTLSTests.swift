import Foundation
import TestSupport
import XCTest

/// https token servers: verified with the credential's caFile; a bad certificate means the
/// secret is never sent.
final class TokenServerTLSTests: XCTestCase {
    private func yaml(tokenURL: String, caFile: String, backendPort: Int) -> String {
        """
        listen: "127.0.0.1:0"
        credentials:
          partner:
            type: oauth2
            tokenUrl: "\(tokenURL)"
            clientId: "client-tls"
            secret: "SENTINEL-TLS-SECRET"
            caFile: "\(caFile)"
            tokenWait: 2s
        routes:
          - host: "api.test"
            upstream: "http://127.0.0.1:\(backendPort)"
            credential: partner
        """
    }

    func testHTTPSTokenServerWorksWithCAFile() throws {
        let ca = try TestCA()
        let tokens = try TokenServer(tlsCert: ca.localhostCert, tlsKey: ca.localhostKey)
        let backend = try Backend()
        let proxy = try ProxyHarness(yaml: yaml(tokenURL: "https://localhost:\(tokens.port)/oauth/token",
                                                caFile: ca.caCert, backendPort: backend.port))
        let client = try RawClient(port: proxy.port)
        client.send("GET /secure HTTP/1.1\r\nHost: api.test\r\n\r\n")
        XCTAssertEqual(try client.readResponse().status, 200)
        XCTAssertEqual(tokens.requests().count, 1)
        XCTAssertEqual(Backend.headerValues(try XCTUnwrap(backend.requests().first), "Authorization"), ["Bearer tok-1"])
    }

    func testBadCertificateMeansTheSecretIsNeverSent() throws {
        let ca = try TestCA()
        // The server presents a certificate for other.test while the URL names localhost.
        let tokens = try TokenServer(tlsCert: ca.otherCert, tlsKey: ca.otherKey)
        let backend = try Backend()
        let proxy = try ProxyHarness(yaml: yaml(tokenURL: "https://localhost:\(tokens.port)/oauth/token",
                                                caFile: ca.caCert, backendPort: backend.port))
        let client = try RawClient(port: proxy.port)
        client.send("GET /secure HTTP/1.1\r\nHost: api.test\r\n\r\n")
        let response = try client.readResponse()
        XCTAssertEqual(response.status, 503, "no token can be obtained")
        XCTAssertNotNil(response.header("Retry-After"))
        XCTAssertEqual(tokens.requests().count, 0, "the token server must record no request: nothing was sent")
        XCTAssertEqual(backend.requests().count, 0)
    }
}
