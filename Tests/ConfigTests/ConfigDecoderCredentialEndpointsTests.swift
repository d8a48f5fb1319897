import Config
import XCTest

/// `credentialEndpoints:`: each endpoint names a credential that can serve it, with a
/// placeholder unless it gives real tokens; loopback only unless allowed; rendered by `check`.
final class ConfigDecoderCredentialEndpointsTests: XCTestCase {
    private let credentials = """
        credentials:
          mca: {type: mca, serverUrl: "https://mca.test", tenantId: t1, clientId: c1, secret: s, placeholderFile: /run/mca.placeholder}
          plain: {type: oauth2, tokenUrl: "https://idp.test/token", clientId: app, secret: s}
          aws: {type: aws, placeholderAccessKeyId: AKIDTOKENSIDECAR, accessKeyIdFile: /k, secretAccessKeyFile: /s}

        """

    func testEndpointsDecodeAndRenderBack() throws {
        let config = try XCTUnwrap(parseOK(credentials + """
            credentialEndpoints:
              listen: "[::1]:9902"
              mca: {credential: mca}
              oauth2: {credential: plain, realTokens: true, path: /token}
              gce: {credential: mca, projectId: p, email: a@p.iam.gserviceaccount.com}
              azure: {credential: mca, identityHeaderFile: /run/h}
              aws: {credential: aws, authorizationTokenFile: /run/a}
            """))
        let section = try XCTUnwrap(config.credentialEndpoints)
        XCTAssertEqual(section.listen, ListenAddress(host: "::1", port: 9902))
        XCTAssertEqual(section.endpoints.map(\.kind), [.mca, .oauth2, .gce, .azure, .aws])
        XCTAssertEqual(section.endpoint(.oauth2), CredentialEndpoint(kind: .oauth2, credential: "plain", realTokens: true, path: "/token"))
        XCTAssertEqual(section.endpoint(.azure)?.secretFile, "/run/h")
        let rendered = config.renderEffective()
        XCTAssertTrue(rendered.contains(#"  oauth2: {credential: "plain", realTokens: true, path: "/token"}  # hands out the real token (weaker)"#), rendered)
        XCTAssertEqual(parseOK(rendered)?.credentialEndpoints, section, "check's output loads back")
    }

    func testProblemsNameTheKey() {
        XCTAssertEqual(problemLines(credentials + """
            credentialEndpoints:
              listen: 0.0.0.0:9902
              oauth2: {credential: plain}
              gce: {credential: mcaa}
              aws: {credential: mca, authorizationTokenFile: /a}
              azure: {credential: aws}
              ec2: {credential: aws}
            """), [
                "c.yaml: credentialEndpoints.listen: 0.0.0.0:9902 is not a loopback address: the endpoints hand out credentials to whoever reaches them; listen on 127.0.0.1 or ::1, or set allowNonLoopback: true",
                "c.yaml: credentialEndpoints.oauth2.credential: plain has no placeholder to hand out: give it placeholder or placeholderFile (apps then never hold its token), or set realTokens: true on this endpoint (weaker: the app holds the real token)",
                "c.yaml: credentialEndpoints.gce.credential: no credential named 'mcaa' (did you mean 'mca'?)",
                "c.yaml: credentialEndpoints.aws.credential: mca is of type mca; the AWS endpoint needs a credential of type aws",
                "c.yaml: credentialEndpoints.azure.identityHeaderFile: required: the file holding the X-IDENTITY-HEADER value apps send (IDENTITY_HEADER)",
                "c.yaml: credentialEndpoints.azure.credential: aws is of type aws; it can only be served by the aws endpoint",
                "c.yaml: credentialEndpoints.ec2: unknown key (did you mean 'mca'?)",
            ])
        XCTAssertNotNil(parseOK(credentials + """
            credentialEndpoints: {listen: 0.0.0.0:9902, allowNonLoopback: true, mca: {credential: mca}}
            """), "allowed when asked for")
        XCTAssertEqual(problemLines(credentials + "credentialEndpoints: {listen: 127.0.0.1:9902}\n"),
                       ["c.yaml: credentialEndpoints: no endpoint configured: add one or more of mca, oauth2, gce, azure, aws"])
    }

    func testRealTokensOnlyForTokensThatExpire() {
        XCTAssertEqual(problemLines("""
            credentials:
              key: {type: static, token: k}
              aws: {type: aws, placeholderAccessKeyId: AKIDTOKENSIDECAR, accessKeyIdFile: /k, secretAccessKeyFile: /s}
            credentialEndpoints:
              oauth2: {credential: key, clientId: app, realTokens: true}
              aws: {credential: aws, authorizationTokenFile: /a, realTokens: true}
            """), [
                "c.yaml: credentialEndpoints.oauth2.realTokens: key's token never expires (static): realTokens would hand the app a long-lived secret; give key a placeholder and leave realTokens out",
                "c.yaml: credentialEndpoints.aws.realTokens: aws's token never expires (aws keys from files): realTokens would hand the app a long-lived secret; give aws a placeholder and leave realTokens out",
            ])
        XCTAssertEqual(problemLines(credentials + "credentialEndpoints: {listen: localhost:9902, mca: {credential: mca}}\n").count, 1,
                       "a name is not a loopback address: the listener binds addresses")
    }
}
