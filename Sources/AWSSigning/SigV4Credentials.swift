/// The AWS credentials a request is signed with. Never log them.
public struct SigV4Credentials: Sendable, Equatable {
    /// The access key id (`AKIA…`, `ASIA…` for temporary credentials).
    public let accessKeyId: String
    /// The secret access key.
    public let secretAccessKey: String
    /// The session token of temporary credentials (`X-Amz-Security-Token`), nil for long-term keys.
    public let sessionToken: String?

    /// Credentials from their parts.
    public init(accessKeyId: String, secretAccessKey: String, sessionToken: String? = nil) {
        self.accessKeyId = accessKeyId
        self.secretAccessKey = secretAccessKey
        self.sessionToken = sessionToken
    }
}

/// Where a signature is valid (SigV4's credential scope): `date/region/service/aws4_request`.
public struct SigV4Scope: Sendable, Equatable {
    /// `YYYYMMDD` (UTC), the request's date.
    public let date: String
    /// The region (`us-east-1`).
    public let region: String
    /// The service (`s3`, `dynamodb`, `sqs`, `sts`, …).
    public let service: String

    /// A scope from its parts.
    public init(date: String, region: String, service: String) {
        self.date = date
        self.region = region
        self.service = service
    }

    /// `date/region/service/aws4_request`.
    public var text: String { "\(date)/\(region)/\(service)/aws4_request" }
}
