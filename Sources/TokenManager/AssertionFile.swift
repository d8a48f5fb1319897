/// The `assertion_file` flow's input: a JWT issued by someone else (a Kubernetes projected
/// service-account token, a SPIFFE JWT-SVID), read before every fetch and sent verbatim.
public struct AssertionFile: Sendable {
    /// The file (`assertionFile`).
    public let file: CredentialFile

    /// Whether the file must hold a JWT (an opaque token is sent as it is).
    public let requiresJWT: Bool

    /// The assertion in `path`, named by the config key `key` in errors.
    public init(path: String, key: String = "assertionFile", requiresJWT: Bool = true) {
        file = CredentialFile(key: key, path: path)
        self.requiresJWT = requiresJWT
    }

    /// The assertion as the file holds it now, without surrounding whitespace. Fails, naming the
    /// file, when it is missing, empty, not a JWT (three base64url parts) or expired at `now`
    /// (seconds since 1970): an assertion the server must refuse is not sent.
    public func current(now: Double) throws(TokenFetchError) -> String {
        let bytes = try file.read()
        let text = String(decoding: bytes, as: UTF8.self).trimmingSpace()
        if text.isEmpty { throw file.problem("is empty") }
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, parts.allSatisfy({ !$0.isEmpty && Base64.decodeURL($0) != nil }) else {
            if !requiresJWT, text.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) { return text }
            throw file.problem(requiresJWT ? "does not hold a JWT (three base64url parts separated by dots)"
                                           : "holds spaces, control or non-ASCII characters")
        }
        if let expiry = JWTExpiry.expiry(of: text), expiry <= now {
            let ago = Int((now - expiry).rounded(.up))
            throw file.problem("expired \(ago) s ago (exp \(Int(expiry))); is the file still being renewed?")
        }
        return text
    }
}

extension String {
    /// Without leading and trailing spaces, tabs and line breaks.
    func trimmingSpace() -> String {
        let isSpace: (UInt8) -> Bool = { $0 == 0x20 || $0 == 0x09 || $0 == 0x0A || $0 == 0x0D }
        let bytes = Array(utf8)
        guard let first = bytes.firstIndex(where: { !isSpace($0) }), let last = bytes.lastIndex(where: { !isSpace($0) }) else {
            return ""
        }
        return String(decoding: bytes[first...last], as: UTF8.self)
    }
}
