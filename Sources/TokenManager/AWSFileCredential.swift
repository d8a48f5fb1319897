import AWSSigning
import EventLoop
import Foundation

/// `type: aws` with files: the real keys read from their files at start and again when the
/// runtime's file watch sees them change (``reload()``); the app signs with
/// ``placeholderAccessKeyId``. Its "token" is the keys (``AccessToken/aws``).
public final class AWSFileCredential: Credential {
    /// The credential's name.
    public let name: String
    /// The access key id the app signs with.
    public let placeholderAccessKeyId: String
    private let files: (id: CredentialFile, secret: CredentialFile, session: CredentialFile?)
    private let token: Locked<AccessToken>

    /// Reads the files now; throws naming the file at fault, never its contents.
    public init(name: String, placeholderAccessKeyId: String, accessKeyIdFile: String, secretAccessKeyFile: String,
                sessionTokenFile: String?) throws(TokenFetchError) {
        self.name = name
        self.placeholderAccessKeyId = placeholderAccessKeyId
        files = (CredentialFile(key: "accessKeyIdFile", path: accessKeyIdFile), CredentialFile(key: "secretAccessKeyFile", path: secretAccessKeyFile),
                 sessionTokenFile.map { CredentialFile(key: "sessionTokenFile", path: $0) })
        token = Locked(try Self.read(files))
    }

    /// Reads the files again; returns whether the keys changed (requests from now on are signed
    /// with the new ones). A file that cannot be read keeps the keys in use.
    @discardableResult
    public func reload() -> Bool {
        guard let fresh = try? Self.read(files) else { return false }
        return token.withLock { current in
            guard current.aws != fresh.aws else { return false }
            current = fresh
            return true
        }
    }

    private static func read(_ files: (id: CredentialFile, secret: CredentialFile, session: CredentialFile?)) throws(TokenFetchError) -> AccessToken {
        func text(_ file: CredentialFile) throws(TokenFetchError) -> String {
            let value = String(decoding: try file.read(), as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
            guard !value.isEmpty, value.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) else {
                throw file.problem("is empty or holds spaces or control characters")
            }
            return value
        }
        let keys = SigV4Credentials(accessKeyId: try text(files.id), secretAccessKey: try text(files.secret),
                           sessionToken: try files.session.map { file throws(TokenFetchError) in try text(file) })
        return AccessToken(value: keys.accessKeyId, aws: keys)
    }

    /// The keys are always there: nobody waits.
    public var tokenWait: Duration { .zero }

    /// The current keys.
    public func currentToken() -> AccessToken? { token.withLock { $0 } }

    /// Completes at once with the keys.
    public func waitForToken(on loop: EventLoop, timeout: Duration, _ completion: @escaping (AccessToken?) -> Void) {
        completion(currentToken())
    }

    /// Keys from files are not replaced by a rejection: the 403 goes to the app.
    public func rejected(_ token: AccessToken, on loop: EventLoop, timeout: Duration, _ completion: ((AccessToken?) -> Void)?) {
        completion?(nil)
    }

    /// Nothing to learn.
    public func accepted(_ token: AccessToken) {}

    /// Keys from files change only when the files do.
    public var refreshable: Bool { false }
}
