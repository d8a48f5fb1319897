import AWSSigning
import XCTest

/// Region and service from endpoint host names, for requests the app did not sign.
final class SigV4EndpointTests: XCTestCase {
    func testRegionalGlobalAndVirtualHostEndpoints() {
        let cases: [(String, String, String)] = [
            ("dynamodb.us-east-1.amazonaws.com", "us-east-1", "dynamodb"),
            ("sqs.eu-west-1.amazonaws.com:443", "eu-west-1", "sqs"),
            ("my.bucket.s3.ap-southeast-2.amazonaws.com", "ap-southeast-2", "s3"),
            ("bucket.s3.dualstack.us-west-2.amazonaws.com", "us-west-2", "s3"),
            ("s3.amazonaws.com", "us-east-1", "s3"),
            ("bucket.s3.amazonaws.com", "us-east-1", "s3"),
            ("sts.amazonaws.com", "us-east-1", "sts"),
            ("bedrock-runtime.us-east-1.amazonaws.com", "us-east-1", "bedrock"),
            ("runtime.sagemaker.eu-central-1.amazonaws.com", "eu-central-1", "sagemaker"),
            ("s3.cn-north-1.amazonaws.com.cn", "cn-north-1", "s3"),
            ("STS.US-GOV-WEST-1.AMAZONAWS.COM.", "us-gov-west-1", "sts"),
        ]
        for (host, region, service) in cases {
            let scope = SigV4Endpoint.scope(forHost: host)
            XCTAssertEqual(scope?.region, region, host)
            XCTAssertEqual(scope?.service, service, host)
        }
    }

    func testOtherHostsAreNotAWSEndpoints() {
        for host in ["example.com", "amazonaws.com.evil.test", "s3.test", "127.0.0.1:9000", "[::1]:443", "amazonaws.com"] {
            XCTAssertNil(SigV4Endpoint.scope(forHost: host), host)
        }
    }
}
