import COpenSSL

/// Why a key or certificate could not be loaded or used. The message says what and why, and
/// never contains key material.
public struct CryptoError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What went wrong, for people.
    public let description: String

    /// Creates an error with a message.
    public init(_ description: String) { self.description = description }

    /// OpenSSL's queued errors, oldest first, as text (drains the thread's error queue).
    package static func openSSLErrors() -> String {
        var messages: [String] = []
        while case let code = ERR_get_error(), code != 0 {
            messages.append(openSSLErrorString(code))
        }
        return messages.isEmpty ? "unknown error" : messages.joined(separator: "; ")
    }

    /// One OpenSSL error code as text.
    package static func openSSLErrorString(_ code: UInt) -> String {
        var buffer = [CChar](repeating: 0, count: 256)
        ERR_error_string_n(code, &buffer, buffer.count)
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
