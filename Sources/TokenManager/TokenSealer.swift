import Crypto
import EventLoop

/// Seals shared-cache entries with AES-256-GCM: `version (1) ‖ nonce (12) ‖ ciphertext ‖ tag (16)`,
/// the additional data being the version and the cache key, so a value copied to another key,
/// sealed under another key or by another format version does not open.
///
/// The plaintext is `issuedAt (ms since 1970, 8 bytes) ‖ lifetime (ms, 8 bytes) ‖ token (UTF-8)`.
public struct TokenSealer: Sendable {
    /// The format version written and accepted.
    public static let version: UInt8 = 1
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
        plaintext += Array(entry.value.utf8)
        guard let sealed = AESGCM.seal(plaintext, key: key, nonce: nonce, additionalData: additionalData(cacheKey)) else { return nil }
        return [Self.version] + nonce + sealed
    }

    /// The entry inside `sealed`, or nil when it does not open (another key, tampering, another
    /// version, a value too short) or holds no valid token.
    public func open(_ sealed: [UInt8], cacheKey: String) -> SharedTokenEntry? {
        let header = 1 + AESGCM.nonceLength
        guard sealed.count >= header + AESGCM.tagLength + 16, sealed[0] == Self.version else { return nil }
        let nonce = Array(sealed[1..<header])
        guard let plaintext = AESGCM.open(Array(sealed[header...]), key: key, nonce: nonce,
                                          additionalData: additionalData(cacheKey)),
              plaintext.count > 16 else { return nil }
        let issuedMs = Self.int64(plaintext[0..<8])
        let lifetimeMs = Self.int64(plaintext[8..<16])
        guard lifetimeMs > 0, let value = String(validating: plaintext[16...], as: UTF8.self),
              !value.unicodeScalars.contains(where: { $0.value < 0x21 || $0.value == 0x7F }) else { return nil }
        return SharedTokenEntry(value: value, issuedAtWall: Double(issuedMs) / 1000, lifetime: .milliseconds(lifetimeMs),
                                sealed: sealed)
    }

    private func additionalData(_ cacheKey: String) -> [UInt8] { [Self.version] + Array(cacheKey.utf8) }

    private static func bigEndian(_ value: Int64) -> [UInt8] {
        (0..<8).map { UInt8(truncatingIfNeeded: value >> (56 - 8 * $0)) }
    }

    private static func int64(_ bytes: ArraySlice<UInt8>) -> Int64 {
        bytes.reduce(Int64(0)) { $0 << 8 | Int64($1) }
    }
}
