import HTTP1
import TokenManager
import XCTest

/// The RFC 8693 token-exchange request as the token server receives it: the exact form body
/// for each way the client proves itself, the actor token only for a delegation, nothing sent
/// for an empty subject, and no token in anything a log line could show; plus what the response
/// side accepts for an exchanged token (`token_type` `N_A`, a lifetime cut to the subject's).
final class STSRequestTests: XCTestCase {
    private let url = "https://sts.test/oauth/token"
    private let grantType = "grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Atoken-exchange"
    /// `subject_token=eyJ.a+b/c=` and its access-token type, form-urlencoded.
    private let subjectPart = "subject_token=eyJ.a%2Bb%2Fc%3D"
        + "&subject_token_type=urn%3Aietf%3Aparams%3Aoauth%3Atoken-type%3Aaccess_token"
    private let accessTokenType = "urn:ietf:params:oauth:token-type:access_token"
    private let jwtType = "urn:ietf:params:oauth:token-type:jwt"

    private func exchange(subject: String = "eyJ.a+b/c=", actor: String? = nil,
                          requested: String? = nil) -> TokenEndpointRequest.Grant {
        .sts(STSParameters(subjectToken: subject, subjectTokenType: accessTokenType,
                                               actorToken: actor, requestedTokenType: requested))
    }

    private func body(_ request: TokenEndpointRequest) -> String {
        String(decoding: request.body, as: UTF8.self)
    }

    func testBasicSendsTheSecretInAuthorizationAndEveryParameterInOrder() throws {
        let request = try TokenEndpointRequest.oauth2(
            tokenURL: url, clientId: "client", proof: .secretBasic("s3cret"),
            grant: exchange(requested: jwtType), scope: "read write", audience: "https://api.test/v1",
            resource: "urn:r", extraParameters: [("x", "1 2")])
        XCTAssertEqual(request.fields.first("Authorization"), "Basic Y2xpZW50OnMzY3JldA==")
        XCTAssertEqual(body(request), grantType + "&" + subjectPart
            + "&requested_token_type=urn%3Aietf%3Aparams%3Aoauth%3Atoken-type%3Ajwt"
            + "&scope=read+write&audience=https%3A%2F%2Fapi.test%2Fv1&resource=urn%3Ar&x=1+2")
        XCTAssertEqual(request.fields.first("Content-Length"), String(request.body.count))
        XCTAssertEqual(request.fields.first("Content-Type"), "application/x-www-form-urlencoded")
        XCTAssertEqual(request.scope, "read write")
        XCTAssertEqual(request.audience, "https://api.test/v1")
    }

    func testPostPutsTheClientFirstAndSendsNoAuthorization() throws {
        let request = try TokenEndpointRequest.oauth2(tokenURL: url, clientId: "client", proof: .secretPost("s3cret"),
                                                      grant: exchange())
        XCTAssertNil(request.fields.first("Authorization"))
        XCTAssertEqual(body(request), grantType + "&client_id=client&client_secret=s3cret&" + subjectPart)
    }

    func testAPublicClientSendsItsIdWhenItHasOneAndNoSecret() throws {
        let named = try TokenEndpointRequest.oauth2(tokenURL: url, clientId: "public-app", proof: .none, grant: exchange())
        XCTAssertNil(named.fields.first("Authorization"))
        XCTAssertEqual(body(named), grantType + "&client_id=public-app&" + subjectPart)

        let anonymous = try TokenEndpointRequest.oauth2(tokenURL: url, clientId: "", proof: .none, grant: exchange())
        XCTAssertNil(anonymous.fields.first("Authorization"))
        XCTAssertEqual(body(anonymous), grantType + "&" + subjectPart, "no empty client_id")
        XCTAssertThrowsError(try TokenEndpointRequest.oauth2(tokenURL: url, clientId: "", proof: .secretPost("s"), grant: exchange()),
                             "only a public client may go without an id") { error in
            XCTAssertEqual(error as? TokenEndpointError, .missingSetting("clientId"))
        }
    }

    func testTheActorTokenAndItsTypeAreSentOnlyForADelegation() throws {
        let delegation = try TokenEndpointRequest.oauth2(tokenURL: url, clientId: "client", proof: .secretPost("s3cret"),
                                                         grant: exchange(actor: "act.or", requested: ""), scope: "read")
        XCTAssertEqual(body(delegation), grantType + "&client_id=client&client_secret=s3cret&" + subjectPart
            + "&actor_token=act.or&actor_token_type=urn%3Aietf%3Aparams%3Aoauth%3Atoken-type%3Ajwt&scope=read",
                       "an empty requested_token_type is left out")
        let plain = body(try TokenEndpointRequest.oauth2(tokenURL: url, clientId: "client", proof: .secretPost("s3cret"),
                                                         grant: exchange()))
        XCTAssertFalse(plain.contains("actor_token"), plain)
    }

    func testNothingIsBuiltForAnEmptySubjectOrActor() {
        XCTAssertThrowsError(try TokenEndpointRequest.oauth2(tokenURL: url, clientId: "c", proof: .none, grant: exchange(subject: ""))) {
            XCTAssertEqual($0 as? TokenEndpointError, .missingSetting("subject_token"))
        }
        XCTAssertThrowsError(try TokenEndpointRequest.oauth2(tokenURL: url, clientId: "c", proof: .none,
                                                             grant: exchange(actor: ""))) {
            XCTAssertEqual($0 as? TokenEndpointError, .missingSetting("actor_token"))
        }
    }

    func testNoTokenShowsInADescription() throws {
        let parameters = STSParameters(subjectToken: "subject-secret", subjectTokenType: accessTokenType,
                                                 actorToken: "actor-secret")
        XCTAssertEqual(parameters.description, "exchange(subject: \(accessTokenType), actor: \(jwtType))")
        XCTAssertEqual(STSParameters(subjectToken: "subject-secret", subjectTokenType: jwtType).description,
                       "exchange(subject: \(jwtType))")
        let grant = TokenEndpointRequest.Grant.sts(parameters)
        let request = try TokenEndpointRequest.oauth2(tokenURL: url, clientId: "c", proof: .none, grant: grant)
        for shown in [String(describing: parameters), String(reflecting: parameters), "\(grant)", "\(request)", String(reflecting: request)] {
            XCTAssertFalse(shown.contains("subject-secret"), shown)
            XCTAssertFalse(shown.contains("actor-secret"), shown)
        }
    }

    private func parse(_ json: String) -> Result<TokenGrant, TokenFetchError> {
        TokenResponseParser.parse(TokenHTTPResponse(status: 200, fields: HTTPFields(), body: Array(json.utf8)),
                                  defaultLifetime: .seconds(3600), wallClock: 1_900_000_000)
    }

    func testAnExchangedTokenTypedNAIsAcceptedAndMacIsStillRefused() throws {
        let exchanged = try parse(#"{"access_token":"xyz","token_type":"N_A","expires_in":300,"#
            + #""issued_token_type":"urn:ietf:params:oauth:token-type:jwt"}"#).get()
        XCTAssertEqual(exchanged.value, "xyz")
        XCTAssertEqual(exchanged.lifetime, .seconds(300))
        XCTAssertEqual(try parse(#"{"access_token":"xyz","token_type":"Bearer"}"#).get().value, "xyz")
        guard case .failure(let refused) = parse(#"{"access_token":"xyz","token_type":"mac"}"#) else {
            return XCTFail("a MAC token cannot be sent as a bearer token")
        }
        XCTAssertEqual(refused.counterName, "invalid_response")
        XCTAssertFalse(refused.description.contains("xyz"))
    }

    func testAGrantEndsWhenItsSubjectExpires() throws {
        let grant = TokenGrant(value: "exchanged", lifetime: .seconds(3600), lifetimeSource: .expiresIn)
        let cut = try grant.limited(to: 90.5).get()
        XCTAssertEqual(cut.lifetime, .milliseconds(90_500))
        XCTAssertEqual(cut.value, "exchanged")
        XCTAssertEqual(cut.lifetimeSource, .subjectExpiry)
        XCTAssertEqual(try grant.limited(to: 3600).get(), grant, "a subject living as long changes nothing")
        XCTAssertEqual(try grant.limited(to: 86_400).get(), grant, "a token shorter than its subject keeps its lifetime")
        for over in [0, -1, -3600.0] {
            guard case .failure(let error) = grant.limited(to: over) else { return XCTFail("a subject expired \(-over) s ago") }
            XCTAssertEqual(error.refusalCode, "invalid_grant", "the caller's token is what is wrong: 403, not 503")
            XCTAssertFalse(error.isCredentialsRejected, "the sidecar's own credentials are fine")
        }
    }
}
