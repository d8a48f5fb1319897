import Glibc

/// An inbound `Authorization: AWS4-HMAC-SHA256 Credential=…, SignedHeaders=…, Signature=…`, as
/// the app's SDK signed it with its placeholder keys: which key, scope and headers.
public struct SigV4Authorization: Sendable, Equatable {
    /// The access key id the app signed with.
    public let accessKeyId: String
    /// Its credential scope.
    public let scope: SigV4Scope
    /// The headers it signed, lowercase, in order.
    public let signedHeaders: [String]

    /// Why an `Authorization` value is not one the sidecar re-signs.
    public enum Problem: Error, Equatable, Sendable {
        /// Another scheme (Basic, Bearer, `AWS4-ECDSA-P256-SHA256` — SigV4A —, SigV2 `AWS`).
        case otherScheme(String)
        /// The SigV4 value does not parse (its part named).
        case malformed(String)
    }

    /// Parses `value` (as bytes, by offsets: it runs for every signed request, and a
    /// Character walk of its ~200 characters cost tens of thousands of instructions).
    public static func parse(_ value: String) -> Result<SigV4Authorization, Problem> {
        var value = value
        return value.withUTF8 { parse(UnsafeRawBufferPointer($0)) }
    }

    /// Parses the bytes of an `Authorization` value.
    public static func parse(_ bytes: UnsafeRawBufferPointer) -> Result<SigV4Authorization, Problem> {
        var index = 0
        while index < bytes.count, bytes[index] == 0x20 { index += 1 }
        let schemeStart = index
        while index < bytes.count, bytes[index] != 0x20 { index += 1 }
        guard index < bytes.count else { return .failure(.otherScheme(text(bytes, schemeStart..<min(bytes.count, schemeStart + 32)))) }
        guard equals(bytes, schemeStart..<index, algorithmBytes) else {
            return .failure(.otherScheme(text(bytes, schemeStart..<min(index, schemeStart + 32))))
        }
        var credential: Range<Int>?, signed: Range<Int>?, signature: Range<Int>?
        while index < bytes.count {
            while index < bytes.count, bytes[index] == 0x20 || bytes[index] == 0x2C { index += 1 }
            let start = index
            while index < bytes.count, bytes[index] != 0x2C { index += 1 }
            if starts(bytes, start..<index, credentialKey) { credential = start + credentialKey.count..<index }
            else if starts(bytes, start..<index, signedHeadersKey) { signed = start + signedHeadersKey.count..<index }
            else if starts(bytes, start..<index, signatureKey) { signature = start + signatureKey.count..<index }
        }
        guard let credential else { return .failure(.malformed("Credential")) }
        guard let signed, !signed.isEmpty else { return .failure(.malformed("SignedHeaders")) }
        guard let signature, !signature.isEmpty else { return .failure(.malformed("Signature")) }
        // AKID/date/region/service/aws4_request
        var pieces: [Range<Int>] = []
        pieces.reserveCapacity(5)
        var pieceStart = credential.lowerBound
        for offset in credential where bytes[offset] == 0x2F {
            pieces.append(pieceStart..<offset)
            pieceStart = offset + 1
        }
        pieces.append(pieceStart..<credential.upperBound)
        guard pieces.count == 5, equals(bytes, pieces[4], terminatorBytes), !pieces[0].isEmpty, pieces[1].count == 8,
              bytes[pieces[1]].allSatisfy({ (0x30...0x39).contains($0) }), !pieces[2].isEmpty, !pieces[3].isEmpty else {
            return .failure(.malformed("Credential"))
        }
        var headers: [String] = []
        var nameStart = signed.lowerBound
        for offset in signed.lowerBound...signed.upperBound where offset == signed.upperBound || bytes[offset] == 0x3B {
            if offset > nameStart { headers.append(lowercased(bytes, nameStart..<offset)) }
            nameStart = offset + 1
        }
        return .success(SigV4Authorization(accessKeyId: text(bytes, pieces[0]),
                                           scope: SigV4Scope(date: text(bytes, pieces[1]), region: text(bytes, pieces[2]),
                                                             service: text(bytes, pieces[3])),
                                           signedHeaders: headers))
    }

    private static let algorithmBytes = Array(SigV4Signer.algorithm.utf8)
    private static let terminatorBytes = Array("aws4_request".utf8)

    /// Whether `bytes[range]` begins with `prefix` (memcmp: the generic comparisons of slices
    /// cost thousands of instructions per request).
    private static func starts(_ bytes: UnsafeRawBufferPointer, _ range: Range<Int>, _ prefix: [UInt8]) -> Bool {
        range.count >= prefix.count && prefix.withUnsafeBytes { memcmp(bytes.baseAddress! + range.lowerBound, $0.baseAddress!, prefix.count) == 0 }
    }

    /// Whether `bytes[range]` is `other`.
    private static func equals(_ bytes: UnsafeRawBufferPointer, _ range: Range<Int>, _ other: [UInt8]) -> Bool {
        range.count == other.count && starts(bytes, range, other)
    }

    private static func text(_ bytes: UnsafeRawBufferPointer, _ range: Range<Int>) -> String {
        String(decoding: UnsafeRawBufferPointer(rebasing: bytes[range]), as: UTF8.self)
    }

    /// The bytes as a String with ASCII letters lowercased (the SDKs send them lowercase already).
    private static func lowercased(_ bytes: UnsafeRawBufferPointer, _ range: Range<Int>) -> String {
        let slice = UnsafeRawBufferPointer(rebasing: bytes[range])
        guard slice.contains(where: { (0x41...0x5A).contains($0) }) else { return String(decoding: slice, as: UTF8.self) }
        return String(decoding: slice.map { (0x41...0x5A).contains($0) ? $0 + 0x20 : $0 }, as: UTF8.self)
    }

    private static let credentialKey = Array("Credential=".utf8)
    private static let signedHeadersKey = Array("SignedHeaders=".utf8)
    private static let signatureKey = Array("Signature=".utf8)
}
