import Foundation

/// A small file a credential reads before a fetch (a signing key, a certificate, an assertion):
/// read whole with a size cap, following symlinks, so a Kubernetes `..data` symlink swap is
/// seen by the next read. Errors name the config key and the path, never the contents.
public struct CredentialFile: Sendable, Equatable, CustomStringConvertible {
    /// The config key that named the file (`signingKeyFile`, `assertionFile`, `clientCert`, ...).
    public let key: String
    /// The resolved path.
    public let path: String
    /// The largest file accepted (a mistaken `/dev/zero` must fail, not hang).
    public static let maxBytes = 256 * 1024

    /// A file named by `key`.
    public init(key: String, path: String) {
        self.key = key
        self.path = path
    }

    /// `signingKeyFile /path`.
    public var description: String { "\(key) \(path)" }

    /// The file's bytes now.
    public func read() throws(TokenFetchError) -> [UInt8] {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else { throw problem("does not exist") }
        if isDirectory.boolValue { throw problem("is a directory, not a file") }
        guard let handle = FileHandle(forReadingAtPath: path) else { throw problem("cannot be opened (permission denied?)") }
        defer { try? handle.close() }
        let data: Data
        do {
            data = try handle.read(upToCount: CredentialFile.maxBytes + 1) ?? Data()  // nil: empty file
        } catch {
            throw problem("cannot be read")
        }
        if data.count > CredentialFile.maxBytes { throw problem("is larger than \(CredentialFile.maxBytes / 1024) KiB") }
        return Array(data)
    }

    /// A client-authentication error about this file: `assertionFile /path: <why>`.
    public func problem(_ why: String) -> TokenFetchError {
        TokenFetchError(.clientAuthentication("\(self): \(why)"))
    }
}
