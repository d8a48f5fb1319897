import COpenSSL
import Glibc

/// Hashes through OpenSSL's EVP interface (OpenSSL is reached only from this module).
public enum Digest {
    /// The SHA-256 of `bytes`.
    public static func sha256(_ bytes: [UInt8]) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: 32)
        var length: UInt32 = 0
        bytes.withUnsafeBytes { input in
            _ = EVP_Digest(input.baseAddress, input.count, &out, &length, EVP_sha256(), nil)
        }
        return out
    }

    /// Lowercase hex of the SHA-256 of a string's UTF-8 bytes.
    public static func sha256Hex(_ text: String) -> String {
        hex(sha256(Array(text.utf8)))
    }

    /// Lowercase hex.
    public static func hex(_ bytes: [UInt8]) -> String {
        let digits: [UInt8] = Array("0123456789abcdef".utf8)
        var out = [UInt8]()
        out.reserveCapacity(bytes.count * 2)
        for byte in bytes {
            out.append(digits[Int(byte >> 4)])
            out.append(digits[Int(byte & 0x0f)])
        }
        return String(decoding: out, as: UTF8.self)
    }
}

extension Digest {
    /// HMAC-SHA-256 of `message` keyed with `key` (JWS HS256).
    public static func hmacSHA256(key: [UInt8], message: [UInt8]) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: 32)
        var length: UInt32 = 0
        key.withUnsafeBytes { keyBytes in
            message.withUnsafeBytes { input in
                _ = HMAC(EVP_sha256(), keyBytes.baseAddress, Int32(keyBytes.count),
                         input.baseAddress?.assumingMemoryBound(to: UInt8.self), input.count, &out, &length)
            }
        }
        return out
    }
}
