import Crypto
import EventLoop

/// A credential's TLS client certificate and key files (`clientCert`, `clientKey`) as a
/// ``ClientIdentity``: read before every token request (and by the credential's watcher), parsed
/// again only when the bytes changed.
public final class ClientIdentityFiles: Sendable {
    private let certificate: CredentialFile
    private let key: CredentialFile
    private let loaded = Locked<ClientIdentity?>(nil)

    /// The pair at these paths; throws when it cannot be used now, naming the file.
    public init(certificatePath: String, keyPath: String) throws(TokenFetchError) {
        certificate = CredentialFile(key: "clientCert", path: certificatePath)
        key = CredentialFile(key: "clientKey", path: keyPath)
        _ = try current()
    }

    /// The pair as the files hold it now.
    public func current() throws(TokenFetchError) -> ClientIdentity {
        let certificateBytes = try certificate.read()
        let keyBytes = try key.read()
        if let cached = loaded.withLock({ $0 }), cached.holds(certificatePEM: certificateBytes, keyPEM: keyBytes) {
            return cached
        }
        let identity: ClientIdentity
        do {
            identity = try ClientIdentity(certificatePEM: certificateBytes, keyPEM: keyBytes)
        } catch {
            throw certificate.problem("\(error) (with clientKey \(key.path))")
        }
        loaded.withLock { $0 = identity }
        return identity
    }
}
