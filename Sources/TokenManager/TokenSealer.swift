import Crypto
import EventLoop

/// Seals shared-cache entries with AES-256-GCM: `version (1) ‖ nonce (12) ‖ ciphertext ‖ tag (16)`,
/// the additional data being the version and the cache key, so a value copied to another key,
/// sealed under another key or by another format version does not open.
///
/// The plaintext is `issuedAt (ms since 1970, 8 bytes) ‖ lifetime (ms, 8 bytes) ‖ token (UTF-8)`;
/// an entry with a refresh token is version 2, `… ‖ token length (4 bytes) ‖ token ‖ refresh
/// token` (version 1 stays what every other credential writes, so replicas of the version
/// before keep sharing those).
public struct TokenSealer: Sendable {
    /// The format version of an entry without a refresh token.
    public static let version: UInt8 = 1
    /// The format version of an entry with one.
    public static let refreshVersion: UInt8 = 2
    private let key: [UInt8]

    /// A sealer with a 32-byte key (nil for any other length).
    public init?(key: [UInt8]) {
        guard key.count == AESGCM.keyLength else { return nil }
        self.key = key
    }

    /// The sealed bytes of `entry` stored under `cacheKey`; nil only if OpenSSL fails.
    public func seal(_ entry: SharedTokenEntry, cacheKey: String) -> [UInt8]? {
        guard let nonce = AESGCM.randomBytes(AESGCM.nonceLength) else { return nil }
        var plaintext = Self.bigEndian(Int64((entry.issuedAtWall * 1000).rounded()))
        let (seconds, attoseconds) = entry.lifetime.components
        plaintext += Self.bigEndian(seconds * 1000 + attoseconds / 1_000_000_000_000_000)
        let version = entry.refreshToken == nil ? Self.version : Self.refreshVersion
        if let refreshToken = entry.refreshToken {
            plaintext += Self.bigEndian(Int64(entry.value.utf8.count)).suffix(4)
            plaintext += Array(entry.value.utf8) + Array(refreshToken.utf8)
        } else {
            plaintext += Array(entry.value.utf8)
        }
        guard let sealed = AESGCM.seal(plaintext, key: key, nonce: nonce, additionalData: additionalData(cacheKey, version)) else {
            return nil
        }
        return [version] + nonce + sealed
    }

    /// The entry inside `sealed`, or nil when it does not open (another key, tampering, another
    /// version, a value too short) or holds no valid token.
    public func open(_ sealed: [UInt8], cacheKey: String) -> SharedTokenEntry? {
        let header = 1 + AESGCM.nonceLength
        guard sealed.count >= header + AESGCM.tagLength + 16, sealed[0] == Self.version || sealed[0] == Self.refreshVersion else {
            return nil
        }
        let version = sealed[0]
        let nonce = Array(sealed[1..<header])
        guard let plaintext = AESGCM.open(Array(sealed[header...]), key: key, nonce: nonce,
                                          additionalData: additionalData(cacheKey, version)),
              plaintext.count > 16 else { return nil }
        let issuedMs = Self.int64(plaintext[0..<8])
        let lifetimeMs = Self.int64(plaintext[8..<16])
        var tokenBytes = plaintext[16...]
        var refreshToken: String?
        if version == Self.refreshVersion {
            guard plaintext.count > 20 else { return nil }
            let length = Int(Self.int64(plaintext[16..<20]))
            guard length > 0, 20 + length < plaintext.count,
                  let refresh = String(validating: plaintext[(20 + length)...], as: UTF8.self), Self.isToken(refresh) else { return nil }
            tokenBytes = plaintext[20..<(20 + length)]
            refreshToken = refresh
        }
        guard lifetimeMs > 0, let value = String(validating: tokenBytes, as: UTF8.self), Self.isToken(value) else { return nil }
        return SharedTokenEntry(value: value, issuedAtWall: Double(issuedMs) / 1000, lifetime: .milliseconds(lifetimeMs),
                                sealed: sealed, refreshToken: refreshToken)
    }

    /// Visible ASCII without spaces, as a token is.
    private static func isToken(_ text: String) -> Bool {
        !text.unicodeScalars.contains(where: { $0.value < 0x21 || $0.value == 0x7F })
    }

    private func additionalData(_ cacheKey: String, _ version: UInt8) -> [UInt8] { [version] + Array(cacheKey.utf8) }

    private static func bigEndian(_ value: Int64) -> [UInt8] {
        (0..<8).map { UInt8(truncatingIfNeeded: value >> (56 - 8 * $0)) }
    }

    private static func int64(_ bytes: ArraySlice<UInt8>) -> Int64 {
        bytes.reduce(Int64(0)) { $0 << 8 | Int64($1) }
    }
}
