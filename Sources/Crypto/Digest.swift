import COpenSSL
import Glibc

/// Hashes through OpenSSL's EVP interface (OpenSSL is reached only from this module).
public enum Digest {
    /// SHA-256 fetched from the default provider once. `EVP_sha256()` makes every use fetch it
    /// again (a locked lookup in OpenSSL 3's method store), and `HMAC()` fetches the MAC, its
    /// digest by name and a context per call (~25k instructions for one SigV4 signature).
    /// A fetched `EVP_MD` is immutable and reference-counted: any thread may use it.
    nonisolated(unsafe) private static let sha256Method: OpaquePointer? = EVP_MD_fetch(nil, "SHA256", nil)

    /// The SHA-256 of `parts`, one after the other, into `out` (32 bytes). OpenSSL fails here
    /// only when it cannot allocate: the process stops rather than use uninitialized bytes as a
    /// hash, a MAC or a signature.
    private static func sha256(_ parts: [UnsafeRawBufferPointer], into out: UnsafeMutablePointer<UInt8>) {
        guard let context = EVP_MD_CTX_new() else { fatalError("OpenSSL: no digest context") }
        defer { EVP_MD_CTX_free(context) }
        var length: UInt32 = 0
        var ok = EVP_DigestInit_ex2(context, sha256Method ?? EVP_sha256(), nil) == 1
        for part in parts where ok && part.count > 0 { ok = EVP_DigestUpdate(context, part.baseAddress, part.count) == 1 }
        guard ok, EVP_DigestFinal_ex(context, out, &length) == 1, length == 32 else { fatalError("OpenSSL: SHA-256 failed") }
    }

    /// The SHA-256 of `bytes`.
    public static func sha256(_ bytes: UnsafeRawBufferPointer) -> [UInt8] {
        [UInt8](unsafeUninitializedCapacity: 32) { out, count in
            sha256([bytes], into: out.baseAddress!)
            count = 32
        }
    }

    /// The SHA-256 of `parts`, one after the other (a body in the chunks it was received in).
    public static func sha256(parts: [UnsafeRawBufferPointer]) -> [UInt8] {
        [UInt8](unsafeUninitializedCapacity: 32) { out, count in
            sha256(parts, into: out.baseAddress!)
            count = 32
        }
    }

    /// The SHA-256 of `bytes`.
    public static func sha256(_ bytes: [UInt8]) -> [UInt8] {
        bytes.withUnsafeBytes { sha256($0) }
    }

    /// Lowercase hex of the SHA-256 of a string's UTF-8 bytes.
    public static func sha256Hex(_ text: String) -> String {
        hex(sha256(Array(text.utf8)))
    }

    /// Lowercase hex.
    public static func hex(_ bytes: [UInt8]) -> String {
        guard !bytes.isEmpty else { return "" }
        return String(unsafeUninitializedCapacity: bytes.count * 2) { out in
            appendHex(bytes, to: out.baseAddress!)
            return bytes.count * 2
        }
    }

    /// Writes the lowercase hex of `bytes` at `out` (twice their count).
    public static func appendHex(_ bytes: [UInt8], to out: UnsafeMutablePointer<UInt8>) {
        var index = 0
        for byte in bytes {
            out[index] = hexDigit(byte >> 4)
            out[index + 1] = hexDigit(byte & 0x0F)
            index += 2
        }
    }

    @inline(__always)
    private static func hexDigit(_ value: UInt8) -> UInt8 { value < 10 ? 0x30 + value : 0x57 + value }
}

extension Digest {
    /// HMAC-SHA-256 of `message` keyed with `key` (RFC 2104; JWS HS256, SigV4): two SHA-256 passes
    /// over the padded key and the message, with the digest fetched once.
    public static func hmacSHA256(key: [UInt8], message: UnsafeRawBufferPointer) -> [UInt8] {
        // A key longer than a block is hashed first; a shorter one is padded with zeros.
        var block = [UInt8](repeating: 0, count: 64)
        if key.count > 64 {
            let hashed = sha256(key)
            block.replaceSubrange(0..<32, with: hashed)
        } else {
            block.replaceSubrange(0..<key.count, with: key)
        }
        var inner = [UInt8](repeating: 0, count: 32)
        var pad = block.map { $0 ^ 0x36 }
        pad.withUnsafeBytes { padBytes in
            inner.withUnsafeMutableBufferPointer { sha256([padBytes, message], into: $0.baseAddress!) }
        }
        for index in 0..<64 { pad[index] = block[index] ^ 0x5C }
        let mac = [UInt8](unsafeUninitializedCapacity: 32) { out, count in
            pad.withUnsafeBytes { padBytes in
                inner.withUnsafeBytes { sha256([padBytes, $0], into: out.baseAddress!) }
            }
            count = 32
        }
        // The padded key (a client secret, a SigV4 signing key) is wiped before it is freed,
        // as HMAC() did.
        block.withUnsafeMutableBytes { OPENSSL_cleanse($0.baseAddress, $0.count) }
        pad.withUnsafeMutableBytes { OPENSSL_cleanse($0.baseAddress, $0.count) }
        inner.withUnsafeMutableBytes { OPENSSL_cleanse($0.baseAddress, $0.count) }
        return mac
    }

    /// HMAC-SHA-256 of `message` keyed with `key`.
    public static func hmacSHA256(key: [UInt8], message: [UInt8]) -> [UInt8] {
        message.withUnsafeBytes { hmacSHA256(key: key, message: $0) }
    }
}
