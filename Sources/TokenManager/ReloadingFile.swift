import Crypto
import EventLoop

/// A value parsed from a ``CredentialFile`` (a signing key, a certificate), re-read before
/// every use and parsed again only when the bytes changed: a rotated file is used by the next
/// fetch without a restart, and an unchanged one costs a read, not a parse.
public final class ReloadingFile<Value: Sendable>: Sendable {
    /// The file.
    public let file: CredentialFile
    private let parse: @Sendable ([UInt8]) throws(CryptoError) -> Value
    private let loaded = Locked<(bytes: [UInt8], value: Value)?>(nil)

    /// A value of `file` made by `parse` (whose error says what is wrong with the contents).
    public init(_ file: CredentialFile, parse: @escaping @Sendable ([UInt8]) throws(CryptoError) -> Value) {
        self.file = file
        self.parse = parse
    }

    /// The value of the file as it is now.
    public func current() throws(TokenFetchError) -> Value {
        let bytes = try file.read()
        if let cached = loaded.withLock({ $0 }), cached.bytes == bytes { return cached.value }
        let value: Value
        do {
            value = try parse(bytes)
        } catch {
            throw file.problem(error.description)
        }
        loaded.withLock { $0 = (bytes, value) }
        return value
    }
}
