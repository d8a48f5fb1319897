import AWSSigning
import XCTest
@testable import TokenManager

/// Temporary AWS credentials from STS's XML and a container endpoint's JSON, and what is refused.
final class AWSCredentialsAnswerTests: XCTestCase {
    private let sts = """
        <AssumeRoleWithWebIdentityResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/">
          <AssumeRoleWithWebIdentityResult>
            <Credentials>
              <AccessKeyId>ASIAEXAMPLE000000001</AccessKeyId>
              <SecretAccessKey>wJalrXUtnFEMI/K7MDENG/bPxRfiCYzEXAMPLEKEY</SecretAccessKey>
              <SessionToken>FwoGZXIvYXdzE&amp;token+/=</SessionToken>
              <Expiration>2026-11-28T13:00:00Z</Expiration>
            </Credentials>
            <AssumedRoleUser><Arn>arn:aws:sts::1:assumed-role/r/s</Arn></AssumedRoleUser>
          </AssumeRoleWithWebIdentityResult>
        </AssumeRoleWithWebIdentityResponse>
        """

    func testSTSAnswer() throws {
        let answer = try AWSCredentialsAnswer.parse(Array(sts.utf8)).get()
        XCTAssertEqual(answer.credentials, SigV4Credentials(accessKeyId: "ASIAEXAMPLE000000001", secretAccessKey: "wJalrXUtnFEMI/K7MDENG/bPxRfiCYzEXAMPLEKEY",
                                                            sessionToken: "FwoGZXIvYXdzE&token+/="))
        XCTAssertEqual(answer.expiration, 1_795_870_800)
    }

    func testContainerAnswerWithAndWithoutASessionToken() throws {
        let json = #"{"AccessKeyId": "ASIAPOD", "SecretAccessKey": "s3cr3t", "Token": "tok", "Expiration": "2026-11-28T13:00:00.500Z"}"#
        let answer = try AWSCredentialsAnswer.parse(Array(json.utf8)).get()
        XCTAssertEqual(answer.credentials.sessionToken, "tok")
        XCTAssertEqual(answer.expiration, 1_795_870_800.5)
        let long = #"{"AccessKeyId": "AKIA", "SecretAccessKey": "s", "Expiration": "2026-11-28T13:00:00Z"}"#
        XCTAssertNil(try AWSCredentialsAnswer.parse(Array(long.utf8)).get().credentials.sessionToken)
    }

    func testBrokenAnswersNameTheFieldNeverAValue() {
        let cases: [(String, String)] = [
            (#"{"SecretAccessKey": "s3cr3t", "Expiration": "2026-11-28T13:00:00Z"}"#, "the answer's AccessKeyId is missing"),
            (#"{"AccessKeyId": "A", "SecretAccessKey": "s3cr3t", "Expiration": "tomorrow"}"#, "the answer's Expiration is not an ISO 8601 time"),
            (#"{"AccessKeyId": "A", "SecretAccessKey": "s3 cr3t", "Expiration": "2026-11-28T13:00:00Z"}"#, "the answer's SecretAccessKey holds characters a key never does"),
            (#"{"AccessKeyId": "A", "SecretAccessKey": "a;b", "Expiration": "2026-11-28T13:00:00Z"}"#, "the answer's SecretAccessKey holds characters a key never does"),
            ("<Error><Code>x</Code></Error>", "the answer has no Credentials"),
            ("not json", "the answer is neither STS XML nor a JSON object"),
        ]
        for (body, problem) in cases {
            guard case .failure(let error) = AWSCredentialsAnswer.parse(Array(body.utf8)) else { return XCTFail(body) }
            XCTAssertEqual(error.description, problem)
            XCTAssertFalse(error.description.contains("s3cr3t"))
        }
    }

    func testErrorCodes() {
        let xml = "<ErrorResponse><Error><Type>Sender</Type><Code>InvalidIdentityToken</Code><Message>m</Message></Error></ErrorResponse>"
        XCTAssertEqual(AWSCredentialsAnswer.errorCode(Array(xml.utf8)), "InvalidIdentityToken")
        XCTAssertEqual(AWSCredentialsAnswer.errorCode(Array(#"{"code": "AccessDenied"}"#.utf8)), "AccessDenied")
        XCTAssertNil(AWSCredentialsAnswer.errorCode(Array("oops".utf8)))
    }

    func testTheCredentialsTravelAsOneTokenValue() {
        let keys = SigV4Credentials(accessKeyId: "ASIA1", secretAccessKey: "se/cret+", sessionToken: "to=ken")
        XCTAssertEqual(SigV4Credentials(tokenValue: keys.tokenValue), keys)
        XCTAssertEqual(AccessToken(value: keys.tokenValue).aws, keys, "a fetched token carries its keys")
        let long = SigV4Credentials(accessKeyId: "AKIA1", secretAccessKey: "s")
        XCTAssertEqual(SigV4Credentials(tokenValue: long.tokenValue), long)
        XCTAssertNil(AccessToken(value: "eyJhbGciOi.bearer").aws)
        XCTAssertNil(SigV4Credentials(tokenValue: "aws4;only-two;parts-here;and;more"))
    }
}
