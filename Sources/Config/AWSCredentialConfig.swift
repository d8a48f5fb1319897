/// `type: aws`: the AWS credentials requests are re-signed with (Signature Version 4), and the
/// placeholder access key id the app signs with instead.
public struct AWSCredentialConfig: Sendable, Equatable {
    /// `placeholderAccessKeyId`: what the app's SDK signs with (any secret); a request signed
    /// with another key id is refused.
    public var placeholderAccessKeyId: String
    /// `accessKeyIdFile`, `secretAccessKeyFile`, `sessionTokenFile` (optional): the real
    /// credentials, re-read when they change.
    public var accessKeyIdFile: String
    public var secretAccessKeyFile: String
    public var sessionTokenFile: String?

    /// Creates the settings.
    public init(placeholderAccessKeyId: String, accessKeyIdFile: String, secretAccessKeyFile: String, sessionTokenFile: String? = nil) {
        self.placeholderAccessKeyId = placeholderAccessKeyId
        self.accessKeyIdFile = accessKeyIdFile
        self.secretAccessKeyFile = secretAccessKeyFile
        self.sessionTokenFile = sessionTokenFile
    }
}
