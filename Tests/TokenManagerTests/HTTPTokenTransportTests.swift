import EventLoop
import HTTP1
import TokenManager
import XCTest

final class HTTPTokenTransportTests: XCTestCase {
    private var server: TokenServerFixture!
    private var harness: LoopHarness!

    override func setUpWithError() throws {
        server = try TokenServerFixture()
        harness = try LoopHarness()
    }

    override func tearDown() {
        harness?.stop()
        server?.stop()
    }

    private func send(_ request: TokenEndpointRequest, timeout: Duration = .seconds(10), maxBodyBytes: Int = 1 << 20)
        -> Result<TokenHTTPResponse, TokenTransportError>? {
        let loop = harness.loop
        let harness = self.harness!
        let box = Locked<Result<TokenHTTPResponse, TokenTransportError>?>(nil)
        let onLoop = Locked(false)
        let done = expectation(description: "response")
        loop.execute {
            let transport = HTTPTokenTransport(loop: loop, timeout: timeout, maxBodyBytes: maxBodyBytes)
            transport.send(request) { result in
                onLoop.update { $0 = harness.isCurrent }
                box.update { $0 = result }
                done.fulfill()
            }
        }
        wait(for: [done], timeout: 20)
        XCTAssertTrue(onLoop.value, "completion runs on the token loop")
        return box.value
    }

    private func mcaRequest() throws -> TokenEndpointRequest {
        try TokenEndpointRequest.mca(serverURL: server.baseURL + "/imf-authserver/", tenantId: "tenant-1",
                                     clientId: "client-id", secret: "s3cr3t")
    }

    func testTokenArrivesInEveryFramingAndTheRequestIsExact() throws {
        let request = try mcaRequest()
        for (index, framing) in ["content-length", "chunked", "close"].enumerated() {
            try server.setControl(["framing": framing, "expires_in": 120])
            guard case .success(let response)? = send(request) else { return XCTFail("no response for \(framing)") }
            XCTAssertEqual(response.status, 200, framing)
            let grant = try TokenResponseParser.parse(response, defaultLifetime: .seconds(1), wallClock: 0).get()
            XCTAssertEqual(grant.value, "tok-\(index + 1)", framing)
            XCTAssertEqual(grant.lifetime, .seconds(120), framing)
        }
        let recorded = server.requests
        XCTAssertEqual(recorded.count, 3)
        for entry in recorded {
            XCTAssertEqual(entry.method, "POST")
            XCTAssertEqual(entry.path, "/imf-authserver/authorization/v1/apps/tenant-1/token")
            XCTAssertEqual(entry.header("Authorization"), "Basic Y2xpZW50LWlkOnMzY3IzdA==")
            XCTAssertEqual(entry.header("Content-Type"), "application/x-www-form-urlencoded")
            XCTAssertEqual(entry.header("Content-Length"), "29")
            XCTAssertEqual(entry.header("Accept"), "application/json")
            XCTAssertEqual(entry.header("Host"), "127.0.0.1:\(server.port)")
            XCTAssertEqual(entry.body, "grant_type=client_credentials")
        }
    }

    func testOAuth2PostBodyArrivesAsBuilt() throws {
        let request = try TokenEndpointRequest.oauth2(tokenURL: server.baseURL + "/oauth/token", clientId: "a b:c",
                                                      secret: "p@ss+/=", authentication: .clientSecretPost, scope: "read write")
        guard case .success? = send(request) else { return XCTFail() }
        let entry = try XCTUnwrap(server.requests.first)
        XCTAssertEqual(entry.path, "/oauth/token")
        XCTAssertNil(entry.header("Authorization"))
        XCTAssertEqual(entry.body, "grant_type=client_credentials&client_id=a+b%3Ac&client_secret=p%40ss%2B%2F%3D&scope=read+write")
    }

    func testErrorStatusesAreDelivered() throws {
        try server.setControl(["status": 401, "error": "invalid_client", "framing": "chunked"])
        guard case .success(let response)? = send(try mcaRequest()) else { return XCTFail() }
        XCTAssertEqual(response.status, 401)
        guard case .failure(let error) = TokenResponseParser.parse(response, defaultLifetime: .seconds(1), wallClock: 0) else {
            return XCTFail()
        }
        XCTAssertTrue(error.isCredentialsRejected)
    }

    func testBodyLimitInEveryFraming() throws {
        for framing in ["content-length", "chunked", "close"] {
            try server.setControl(["framing": framing])
            XCTAssertEqual(send(try mcaRequest(), maxBodyBytes: 16), .failure(.bodyTooLarge(limit: 16)), framing)
        }
    }

    func testTimeoutWhenTheServerHangs() throws {
        try server.setControl(["delay": 5])
        let started = ContinuousClock.now
        XCTAssertEqual(send(try mcaRequest(), timeout: .milliseconds(300)), .failure(.timeout(.milliseconds(300))))
        XCTAssertLessThan(ContinuousClock.now - started, .seconds(3))
    }

    func testRefusedConnection() throws {
        let port = server.port
        server.stop()
        let request = try TokenEndpointRequest.mca(serverURL: "http://127.0.0.1:\(port)", tenantId: "t", clientId: "c", secret: "s")
        XCTAssertEqual(send(request), .failure(.connection(.refused)))
    }

    func testHTTPSNeedsTLSSupport() throws {
        let request = try TokenEndpointRequest.mca(serverURL: "https://127.0.0.1:1", tenantId: "t", clientId: "c", secret: "s")
        let result = send(request)
        XCTAssertEqual(result, .failure(.tlsUnavailable))
        XCTAssertEqual(TokenTransportError.tlsUnavailable.description,
                       "https token endpoints need TLS support (no TLS connection could be created)")
    }
}
