import AWSSigning
import Foundation

/// The files of an `aws` credential's real keys (`accessKeyIdFile`, `secretAccessKeyFile`,
/// optional `sessionTokenFile`). The keys serve as a static credential's token
/// (``SigV4Credentials/tokenValue``), read at start and again when the runtime's file watch sees
/// the files change. Errors name the file, never its contents.
public struct AWSKeyFiles: Sendable {
    private let id: CredentialFile
    private let secret: CredentialFile
    private let session: CredentialFile?

    /// The files at these paths (read by ``read()``).
    public init(accessKeyIdFile: String, secretAccessKeyFile: String, sessionTokenFile: String?) {
        id = CredentialFile(key: "accessKeyIdFile", path: accessKeyIdFile)
        secret = CredentialFile(key: "secretAccessKeyFile", path: secretAccessKeyFile)
        session = sessionTokenFile.map { CredentialFile(key: "sessionTokenFile", path: $0) }
    }

    /// The keys the files hold now.
    public func read() throws(TokenFetchError) -> SigV4Credentials {
        func text(_ file: CredentialFile) throws(TokenFetchError) -> String {
            let value = String(decoding: try file.read(), as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
            guard !value.isEmpty, value.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F && $0 != UInt8(ascii: ";") }) else {
                throw file.problem("is empty or holds spaces, control characters or ';'")
            }
            return value
        }
        return SigV4Credentials(accessKeyId: try text(id), secretAccessKey: try text(secret),
                                sessionToken: try session.map { file throws(TokenFetchError) in try text(file) })
    }
}
