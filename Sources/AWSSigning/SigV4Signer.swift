import Crypto
import Synchronization
import Foundation

/// Signature Version 4 (AWS4-HMAC-SHA256): the string to sign, the signing key and the
/// signature of a canonical request (``SigV4Canonical``).
public enum SigV4Signer {
    /// The algorithm's name, first word of the `Authorization` value and of the string to sign.
    public static let algorithm = "AWS4-HMAC-SHA256"

    /// The hex SHA-256 of an empty payload.
    public static let emptyPayloadHash = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

    /// `AWS4-HMAC-SHA256 \n timestamp \n scope \n hex(SHA-256(canonical request))`.
    public static func stringToSign(timestamp: String, scope: SigV4Scope, canonicalRequest: String) -> String {
        String(decoding: stringToSign(timestamp: timestamp, scope: scope, canonicalRequest: Array(canonicalRequest.utf8)), as: UTF8.self)
    }

    /// The string to sign of a canonical request written as bytes.
    public static func stringToSign(timestamp: String, scope: SigV4Scope, canonicalRequest: [UInt8]) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(algorithm.utf8.count + timestamp.utf8.count + 64 + 67)
        out.append(contentsOf: algorithm.utf8)
        out.append(0x0A)
        out.append(contentsOf: timestamp.utf8)
        out.append(0x0A)
        scope.append(to: &out)
        out.append(0x0A)
        let hash = Digest.sha256(canonicalRequest)
        let start = out.count
        out.append(contentsOf: repeatElement(0, count: 64))
        out.withUnsafeMutableBufferPointer { Digest.appendHex(hash, to: $0.baseAddress! + start) }
        return out
    }

    /// The key of a day, region and service (``derivedKey(secret:scope:)``), remembered: the
    /// four HMACs that make it cost more than the rest of a request's signing, and it changes
    /// once a day per region, service and secret (the AWS SDKs cache it too). At most
    /// ``keyCacheLimit`` keys are kept; past that the cache starts over. The last key used is
    /// compared first (a route signs for one region and service with one secret all day), so
    /// most requests hash nothing to find it.
    public static func signingKey(secret: String, scope: SigV4Scope) -> [UInt8] {
        let name = KeyName(secret: secret, date: scope.date, region: scope.region, service: scope.service)
        if let key = keys.withLock({ cache in cache.last.flatMap { $0.name == name ? $0.key : nil } ?? cache.keys[name] }) {
            return key
        }
        let key = derivedKey(secret: secret, scope: scope)
        keys.withLock { cache in
            if cache.keys.count >= keyCacheLimit { cache.keys.removeAll() }
            cache.keys[name] = key
            cache.last = (name, key)
        }
        return key
    }

    /// What a signing key is derived from.
    private struct KeyName: Hashable {
        let secret: String, date: String, region: String, service: String
    }

    /// The keys derived, and the one derived or found last.
    private struct KeyCache {
        var keys: [KeyName: [UInt8]] = [:]
        var last: (name: KeyName, key: [UInt8])?
    }

    private static let keys = Mutex(KeyCache())
    /// Keys kept (credentials × regions × services in use on one day).
    static let keyCacheLimit = 64

    /// The key of a day, region and service: HMAC chain from `AWS4` + the secret.
    static func derivedKey(secret: String, scope: SigV4Scope) -> [UInt8] {
        var key = Digest.hmacSHA256(key: Array(("AWS4" + secret).utf8), message: Array(scope.date.utf8))
        key = Digest.hmacSHA256(key: key, message: Array(scope.region.utf8))
        key = Digest.hmacSHA256(key: key, message: Array(scope.service.utf8))
        return Digest.hmacSHA256(key: key, message: Array("aws4_request".utf8))
    }

    /// The hex signature of `stringToSign` with `key`.
    public static func signature(key: [UInt8], stringToSign: String) -> String {
        String(decoding: signatureBytes(key: key, stringToSign: Array(stringToSign.utf8)), as: UTF8.self)
    }

    /// The hex signature's bytes.
    public static func signatureBytes(key: [UInt8], stringToSign: [UInt8]) -> [UInt8] {
        let mac = Digest.hmacSHA256(key: key, message: stringToSign)
        return [UInt8](unsafeUninitializedCapacity: 64) { out, count in
            Digest.appendHex(mac, to: out.baseAddress!)
            count = 64
        }
    }

    /// The `Authorization` value's bytes: `AWS4-HMAC-SHA256 Credential=AKID/scope, SignedHeaders=…, Signature=…`.
    public static func authorization(accessKeyId: String, scope: SigV4Scope, signedHeaders: [String], signature: [UInt8]) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(200 + signedHeaders.count * 24)
        out.append(contentsOf: algorithm.utf8)
        out.append(contentsOf: " Credential=".utf8)
        out.append(contentsOf: accessKeyId.utf8)
        out.append(0x2F)
        scope.append(to: &out)
        out.append(contentsOf: ", SignedHeaders=".utf8)
        for (index, name) in signedHeaders.enumerated() {
            if index > 0 { out.append(0x3B) }
            out.append(contentsOf: name.utf8)
        }
        out.append(contentsOf: ", Signature=".utf8)
        out.append(contentsOf: signature)
        return out
    }

    /// `X-Amz-Date`'s `YYYYMMDDTHHMMSSZ` (UTC) for `epochSeconds`; its first eight characters
    /// are the scope's date. The last second's text is kept: requests in the same second share it.
    public static func timestamp(epochSeconds: Int) -> String {
        if let kept = lastTimestamp.withLock({ $0.seconds == epochSeconds ? $0.text : nil }) { return kept }
        var seconds = time_t(epochSeconds)
        var parts = tm()
        gmtime_r(&seconds, &parts)
        func two(_ value: Int32) -> String { value < 10 ? "0\(value)" : "\(value)" }
        let text = "\(parts.tm_year + 1900)\(two(parts.tm_mon + 1))\(two(parts.tm_mday))T\(two(parts.tm_hour))\(two(parts.tm_min))\(two(parts.tm_sec))Z"
        lastTimestamp.withLock { $0 = (epochSeconds, text) }
        return text
    }

    private static let lastTimestamp = Mutex<(seconds: Int, text: String)>((Int.min, ""))
}
