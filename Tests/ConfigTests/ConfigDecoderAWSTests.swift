import XCTest
@testable import Config

/// `type: aws` with each source of its keys, and `inject: {sigv4: …}`.
final class ConfigDecoderAWSTests: XCTestCase {
    private let credential = "credentials:\n  aws:\n    type: aws\n    placeholderAccessKeyId: AKIDTOKENSIDECAR0001\n    accessKeyIdFile: /s/id\n    secretAccessKeyFile: /s/secret\n"

    func testAnAWSCredentialSignsOnlyThroughASigV4Placement() throws {
        let config = try XCTUnwrap(parseOK(credential + "routes:\n  - host: \"*.amazonaws.com:443\"\n    upstream: https://s3.test\n    credential: aws\n"
                                           + "    inject: {sigv4: {allowedRegions: [us-east-1], allowedServices: [s3, sts]}}\n"))
        XCTAssertEqual(config.routes.first?.placement, .sigv4(SigV4RouteSettings(allowedRegions: ["us-east-1"], allowedServices: ["s3", "sts"],
                                                                                placeholderAccessKeyId: "AKIDTOKENSIDECAR0001")))
        guard case .aws(let aws)? = config.credentials.first?.kind else { return XCTFail("not decoded") }
        XCTAssertEqual(aws.placeholderAccessKeyId, "AKIDTOKENSIDECAR0001")
        XCTAssertTrue(config.renderEffective().contains("inject: {sigv4: {allowedRegions: [\"us-east-1\"], allowedServices: [\"s3\", \"sts\"], signUnsigned: false, maxHashedBody: 1MiB}}"))
        XCTAssertTrue(problemLines(credential + "routes:\n  - host: a.test\n    credential: aws\n")
            .contains("c.yaml: routes[0].credential: 'aws' is an aws credential, which signs requests: add inject: {sigv4: {allowedRegions: [...], allowedServices: [...]}}"))
        XCTAssertTrue(problemLines(credential + "routes:\n  - host: a.test\n    credential: aws\n    inject: {header: x-k}\n")
            .contains("c.yaml: routes[0].inject: an aws credential signs requests: use inject: {sigv4: {…}}"))
        XCTAssertTrue(problemLines("credentials:\n  k: {type: static, token: t}\nroutes:\n  - host: a.test\n    credential: k\n    inject: {sigv4: {}}\n")
            .contains("c.yaml: routes[0].inject: sigv4 signs with an aws credential; 'k' is not one"))
        XCTAssertTrue(problemLines("credentials:\n  aws:\n    type: aws\n    placeholderAccessKeyId: short\n    accessKeyIdFile: /i\n    secretAccessKeyFile: /s\n")
            .contains("c.yaml: credentials.aws.placeholderAccessKeyId: must be 16 to 128 letters and digits, as an access key id is"))
    }

    /// `maxHashedBody`: a size up to 16 MiB, shown by check; anything else is refused by name.
    func testTheHashedBodyLimitIsASizeUpTo64MiB() throws {
        let raised = try XCTUnwrap(parseOK(credential + "routes:\n  - host: \"*.amazonaws.com:443\"\n    upstream: https://s3.test\n    credential: aws\n"
                                           + "    inject: {sigv4: {maxHashedBody: 8MiB}}\n"))
        guard case .sigv4(let settings)? = raised.routes.first?.placement else { return XCTFail("not decoded") }
        XCTAssertEqual(settings.maxHashedBody, 8 << 20)
        XCTAssertTrue(raised.renderEffective().contains("maxHashedBody: 8MiB}}"))
        for bad in ["0", "17MiB", "lots"] {
            let yaml = credential + "routes:\n  - host: a.test\n    credential: aws\n    inject: {sigv4: {maxHashedBody: \(bad)}}\n"
            XCTAssertTrue(problemLines(yaml).contains("c.yaml: routes[0].inject.sigv4.maxHashedBody: expected a size from 1 to 16MiB such as 8MiB, got '\(bad)'"),
                          "\(bad): \(problemLines(yaml))")
        }
    }

    private let route = "routes:\n  - host: \"*.amazonaws.com:443\"\n    upstream: https://s3.test\n    credential: aws\n    inject: {sigv4: {}}\n"

    func testWebIdentityTakesEKSsEnvironmentAndChecksItsSettings() throws {
        let yaml = "credentials:\n  aws:\n    type: aws\n    placeholderAccessKeyId: AKIDTOKENSIDECAR0001\n    webIdentity: {duration: 1h}\n    refreshAt: 50%\n" + route
        let config = try XCTUnwrap(parseOK(yaml, environment: ["AWS_ROLE_ARN": "arn:aws:iam::1:role/app", "AWS_WEB_IDENTITY_TOKEN_FILE": "/var/run/t",
                                                               "AWS_REGION": "eu-west-1"]))
        guard case .aws(let aws)? = config.credentials.first?.kind, case .webIdentity(let identity) = aws.source else { return XCTFail("not decoded") }
        XCTAssertEqual(identity.roleArn, "arn:aws:iam::1:role/app")
        XCTAssertEqual(identity.tokenFile, "/var/run/t")
        XCTAssertEqual(identity.stsEndpoint.description, "https://sts.eu-west-1.amazonaws.com:443/")
        XCTAssertEqual(identity.sessionName, "token-sidecar")
        XCTAssertEqual(identity.duration, .seconds(3600))
        XCTAssertEqual(aws.fetch.refreshAt, 0.5)
        XCTAssertTrue(config.renderEffective().contains("roleArn: \"arn:aws:iam::1:role/app\""))
        let problems = problemLines("credentials:\n  aws:\n    type: aws\n    placeholderAccessKeyId: AKIDTOKENSIDECAR0001\n"
                                    + "    webIdentity: {roleArn: role/app, duration: 5m, colour: red}\n" + route)
        XCTAssertTrue(problems.contains("c.yaml: credentials.aws.webIdentity.tokenFile: required key is missing and AWS_WEB_IDENTITY_TOKEN_FILE is not set: the projected service account token's file"), "\(problems)")
        XCTAssertTrue(problems.contains("c.yaml: credentials.aws.webIdentity.roleArn: is not a role ARN (arn:aws:iam::123456789012:role/name)"), "\(problems)")
        XCTAssertTrue(problems.contains("c.yaml: credentials.aws.webIdentity.duration: must be between 15m and 12h (STS's DurationSeconds)"), "\(problems)")
        XCTAssertTrue(problems.contains { $0.contains("webIdentity.colour") }, "\(problems)")
    }

    func testContainerCredentialsTakeECSsEnvironment() throws {
        let yaml = "credentials:\n  aws:\n    type: aws\n    placeholderAccessKeyId: AKIDTOKENSIDECAR0001\n    containerCredentials: {}\n" + route
        let config = try XCTUnwrap(parseOK(yaml, environment: ["AWS_CONTAINER_CREDENTIALS_FULL_URI": "http://169.254.170.23/v1/credentials",
                                                               "AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE": "/var/run/pod-identity"]))
        guard case .aws(let aws)? = config.credentials.first?.kind, case .containerCredentials(let container) = aws.source else { return XCTFail("not decoded") }
        XCTAssertEqual(container.uri.description, "http://169.254.170.23:80/v1/credentials")
        XCTAssertEqual(container.authorizationTokenFile, "/var/run/pod-identity")
        XCTAssertTrue(problemLines(yaml).contains("c.yaml: credentials.aws.containerCredentials.uri: required key is missing and AWS_CONTAINER_CREDENTIALS_FULL_URI is not set: the container credentials endpoint (or AWS_CONTAINER_CREDENTIALS_RELATIVE_URI)"))
        // Classic ECS: a path on the agent's address, taken before a full URI as the SDKs do.
        let ecs = try XCTUnwrap(parseOK(yaml, environment: ["AWS_CONTAINER_CREDENTIALS_RELATIVE_URI": "/v2/credentials/3f1c"]))
        guard case .aws(let task)? = ecs.credentials.first?.kind, case .containerCredentials(let agent) = task.source else { return XCTFail("not decoded") }
        XCTAssertEqual(agent.uri.description, "http://169.254.170.2:80/v2/credentials/3f1c")
        let both = try XCTUnwrap(parseOK(yaml, environment: ["AWS_CONTAINER_CREDENTIALS_RELATIVE_URI": "/v2/credentials/3f1c",
                                                             "AWS_CONTAINER_CREDENTIALS_FULL_URI": "http://169.254.170.23/v1/credentials"]))
        guard case .aws(let pod)? = both.credentials.first?.kind, case .containerCredentials(let chosen) = pod.source else { return XCTFail("not decoded") }
        XCTAssertEqual(chosen.uri.description, "http://169.254.170.2:80/v2/credentials/3f1c", "the relative URI first")
        let bare = try XCTUnwrap(parseOK(yaml, environment: ["AWS_CONTAINER_CREDENTIALS_RELATIVE_URI": "v2/credentials/3f1c"]))
        guard case .aws(let slashless)? = bare.credentials.first?.kind, case .containerCredentials(let fixed) = slashless.source else { return XCTFail("not decoded") }
        XCTAssertEqual(fixed.uri.description, "http://169.254.170.2:80/v2/credentials/3f1c", "a path without its leading slash")
    }

    func testExactlyOneSource() {
        let both = "credentials:\n  aws:\n    type: aws\n    placeholderAccessKeyId: AKIDTOKENSIDECAR0001\n    accessKeyIdFile: /i\n    secretAccessKeyFile: /s\n"
            + "    containerCredentials: {uri: \"http://127.0.0.1:1/c\"}\n" + route
        XCTAssertTrue(problemLines(both).contains("c.yaml: credentials.aws: an aws credential needs exactly one source: accessKeyIdFile (with secretAccessKeyFile), webIdentity or containerCredentials; found accessKeyIdFile and containerCredentials"))
        let none = "credentials:\n  aws:\n    type: aws\n    placeholderAccessKeyId: AKIDTOKENSIDECAR0001\n" + route
        XCTAssertTrue(problemLines(none).contains { $0.hasSuffix("none is given") })
        let stray = "credentials:\n  aws:\n    type: aws\n    placeholderAccessKeyId: AKIDTOKENSIDECAR0001\n    secretAccessKeyFile: /s\n"
            + "    webIdentity: {roleArn: \"arn:aws:iam::1:role/a\", tokenFile: /t}\n" + route
        XCTAssertTrue(problemLines(stray).contains("c.yaml: credentials.aws.secretAccessKeyFile: goes with accessKeyIdFile, not with webIdentity"))
    }
}

