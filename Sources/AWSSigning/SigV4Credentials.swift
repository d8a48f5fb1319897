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

    /// The credentials as one token value (`aws4;<id>;<secret>;<session token>`), so that a
    /// fetched set travels where a token does: the token cache, the fleet's sealed entries, a
    /// replica adopting one. None of the parts holds a `;`.
    public var tokenValue: String {
        "\(Self.tokenPrefix)\(accessKeyId);\(secretAccessKey);\(sessionToken ?? "")"
    }

    /// What a ``tokenValue`` starts with.
    public static let tokenPrefix = "aws4;"

    /// The credentials of a ``tokenValue``; nil for any other text.
    public init?(tokenValue: String) {
        guard tokenValue.hasPrefix(Self.tokenPrefix) else { return nil }
        let parts = tokenValue.dropFirst(Self.tokenPrefix.count).split(separator: ";", omittingEmptySubsequences: false)
        guard parts.count == 3, !parts[0].isEmpty, !parts[1].isEmpty else { return nil }
        self.init(accessKeyId: String(parts[0]), secretAccessKey: String(parts[1]), sessionToken: parts[2].isEmpty ? nil : String(parts[2]))
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

    /// Appends ``text``'s bytes.
    public func append(to out: inout [UInt8]) {
        out.append(contentsOf: date.utf8)
        out.append(0x2F)
        out.append(contentsOf: region.utf8)
        out.append(0x2F)
        out.append(contentsOf: service.utf8)
        out.append(contentsOf: "/aws4_request".utf8)
    }
}
