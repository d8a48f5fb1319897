import HTTP1
import TokenManager
import XCTest

final class TokenEndpointRequestTests: XCTestCase {
    private func text(_ request: TokenEndpointRequest) -> String {
        String(decoding: request.bytes, as: UTF8.self)
    }

    func testMCARequestIsByteExactWithTrailingSlash() throws {
        let request = try TokenEndpointRequest.mca(
            serverURL: "https://mca.example.com/imf-authserver/", tenantId: "0f1e-app",
            clientId: "client-id", secret: "s3cr3t")
        XCTAssertEqual(request.endpoint, TokenEndpoint(scheme: "https", host: "mca.example.com", port: 443,
                                                       path: "/imf-authserver/authorization/v1/apps/0f1e-app/token"))
        XCTAssertTrue(request.endpoint.isTLS)
        XCTAssertEqual(text(request), """
            POST /imf-authserver/authorization/v1/apps/0f1e-app/token HTTP/1.1\r
            Host: mca.example.com\r
            User-Agent: token-sidecar\r
            Accept: application/json\r
            Content-Type: application/x-www-form-urlencoded\r
            Content-Length: 29\r
            Authorization: Basic Y2xpZW50LWlkOnMzY3IzdA==\r
            Connection: close\r
            \r
            grant_type=client_credentials
            """)
    }

    func testMCAPathHasNoDoubleSlashWithOrWithoutTrailingSlash() throws {
        for server in ["http://127.0.0.1:8080/imf-authserver", "http://127.0.0.1:8080/imf-authserver/",
                       "http://127.0.0.1:8080/imf-authserver//"] {
            let request = try TokenEndpointRequest.mca(serverURL: server, tenantId: "t", clientId: "c", secret: "s")
            XCTAssertEqual(request.endpoint.path, "/imf-authserver/authorization/v1/apps/t/token", server)
            XCTAssertEqual(request.fields.first("Host"), "127.0.0.1:8080")
        }
        for server in ["https://mca.example.com", "https://mca.example.com/"] {
            let request = try TokenEndpointRequest.mca(serverURL: server, tenantId: "t", clientId: "c", secret: "s")
            XCTAssertEqual(request.endpoint.path, "/authorization/v1/apps/t/token", server)
        }
    }

    func testMCABasicUsesTheRawIdAndSecret() throws {
        // MCA (like the seed SDK) does not form-encode: base64("a b:p@ss")
        let request = try TokenEndpointRequest.mca(serverURL: "http://h", tenantId: "t", clientId: "a b", secret: "p@ss")
        XCTAssertEqual(request.fields.first("Authorization"), "Basic YSBiOnBAc3M=")
    }

    func testOAuth2BasicFormEncodesIdAndSecretBeforeBase64() throws {
        let request = try TokenEndpointRequest.oauth2(tokenURL: "https://idp.example.com/oauth/token",
                                                      clientId: "a b:c", secret: "p@ss+/=")
        // base64("a+b%3Ac:p%40ss%2B%2F%3D")
        XCTAssertEqual(request.fields.first("Authorization"), "Basic YStiJTNBYzpwJTQwc3MlMkIlMkYlM0Q=")
        XCTAssertEqual(String(decoding: request.body, as: UTF8.self), "grant_type=client_credentials")
        XCTAssertEqual(request.fields.first("Content-Length"), "29")
        XCTAssertEqual(request.fields.first("Content-Type"), "application/x-www-form-urlencoded")
    }

    func testOAuth2PostPutsCredentialsInTheFormAndNoAuthorization() throws {
        let request = try TokenEndpointRequest.oauth2(
            tokenURL: "http://localhost:9000/token?tenant=x", clientId: "a b:c", secret: "p@ss+/=",
            authentication: .clientSecretPost, scope: "read write", audience: "https://api.example.com",
            resource: "urn:x", extraParameters: [("b", "2"), ("a", "1 2")])
        XCTAssertNil(request.fields.first("Authorization"))
        XCTAssertEqual(request.endpoint.path, "/token?tenant=x")
        XCTAssertEqual(request.fields.first("Host"), "localhost:9000")
        let body = String(decoding: request.body, as: UTF8.self)
        XCTAssertEqual(body, "grant_type=client_credentials&client_id=a+b%3Ac&client_secret=p%40ss%2B%2F%3D"
            + "&scope=read+write&audience=https%3A%2F%2Fapi.example.com&resource=urn%3Ax&b=2&a=1+2")
        XCTAssertEqual(request.fields.first("Content-Length"), String(request.body.count))
        XCTAssertEqual(request.scope, "read write")
        XCTAssertEqual(request.audience, "https://api.example.com")
    }

    func testOAuth2OrderIsScopeAudienceResourceThenExtras() throws {
        let request = try TokenEndpointRequest.oauth2(tokenURL: "http://h/t", clientId: "c", secret: "s",
                                                      scope: "s1", resource: "r", extraParameters: [("x", "*-._~")])
        XCTAssertEqual(String(decoding: request.body, as: UTF8.self),
                       "grant_type=client_credentials&scope=s1&resource=r&x=*-._%7E")
    }

    func testFormURLEncoding() {
        XCTAssertEqual(FormURLEncoding.encode("AZaz09*-._ ~!é"), "AZaz09*-._+%7E%21%C3%A9")
    }

    func testDescriptionNeverShowsTheSecret() throws {
        let request = try TokenEndpointRequest.oauth2(tokenURL: "http://h/t", clientId: "c", secret: "topsecret",
                                                      authentication: .clientSecretPost)
        XCTAssertEqual("\(request)", "POST http://h/t")
        XCTAssertFalse(String(reflecting: request).contains("topsecret"))
    }

    func testEndpointURLParsing() throws {
        let v6 = try TokenEndpoint(url: "http://[::1]:8443/a")
        XCTAssertEqual(v6.host, "::1")
        XCTAssertEqual(v6.authority, "[::1]:8443")
        let https = try TokenEndpoint(url: "HTTPS://Example.COM:443")
        XCTAssertEqual(https.authority, "example.com")
        XCTAssertEqual(https.path, "/")
        for bad in ["ftp://h/x", "h/x", "http://user:pw@h/x", "http://h:0/", "http://h:99999/", "http:///x",
                    "http://h/a b", "http://h/x#f"] {
            XCTAssertThrowsError(try TokenEndpoint(url: bad), bad)
        }
        XCTAssertThrowsError(try TokenEndpointRequest.mca(serverURL: "http://h", tenantId: "", clientId: "c", secret: "s"))
        XCTAssertThrowsError(try TokenEndpointRequest.oauth2(tokenURL: "http://h", clientId: "c", secret: ""))
    }

    func testJWTBearerAndRefreshTokenGrantForms() throws {
        let bearer = try TokenEndpointRequest.oauth2(tokenURL: "https://idp.test/token", clientId: "svc", proof: .none,
                                                     grant: .jwtBearer(assertion: "a.b.c"), scope: "read")
        XCTAssertEqual(String(decoding: bearer.body, as: UTF8.self),
                       "grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Ajwt-bearer&assertion=a.b.c&client_id=svc&scope=read")
        let refresh = try TokenEndpointRequest.oauth2(tokenURL: "https://idp.test/token", clientId: "svc", proof: .secretBasic("s"),
                                                      grant: .refreshToken("rt/1+"))
        XCTAssertEqual(String(decoding: refresh.body, as: UTF8.self), "grant_type=refresh_token&refresh_token=rt%2F1%2B")
        XCTAssertTrue(refresh.fields.contains { $0.name == "Authorization" && $0.value.hasPrefix("Basic ") })
        XCTAssertFalse(refresh.description.contains("rt"), "never the refresh token")
        XCTAssertThrowsError(try TokenEndpointRequest.oauth2(tokenURL: "https://idp.test/token", clientId: "svc", proof: .none,
                                                             grant: .refreshToken("")))
    }
}
