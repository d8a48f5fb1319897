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

    /// Parses `value` (as bytes: it runs for every signed request, and a Character walk of its
    /// ~200 characters cost tens of thousands of instructions).
    public static func parse(_ value: String) -> Result<SigV4Authorization, Problem> {
        let bytes = Array(value.utf8)
        let trimmed = bytes.drop { $0 == 0x20 }
        guard let space = trimmed.firstIndex(of: 0x20) else { return .failure(.otherScheme(text(trimmed.prefix(32)))) }
        let scheme = text(trimmed[..<space])
        guard scheme == SigV4Signer.algorithm else { return .failure(.otherScheme(String(scheme.prefix(32)))) }
        var credential: ArraySlice<UInt8>?, signed: ArraySlice<UInt8>?, signature: ArraySlice<UInt8>?
        for part in trimmed[space...].split(separator: 0x2C) {
            let item = part.drop { $0 == 0x20 }
            if item.starts(with: credentialKey) { credential = item.dropFirst(credentialKey.count) }
            else if item.starts(with: signedHeadersKey) { signed = item.dropFirst(signedHeadersKey.count) }
            else if item.starts(with: signatureKey) { signature = item.dropFirst(signatureKey.count) }
        }
        guard let credential else { return .failure(.malformed("Credential")) }
        guard let signed, !signed.isEmpty else { return .failure(.malformed("SignedHeaders")) }
        guard let signature, !signature.isEmpty else { return .failure(.malformed("Signature")) }
        let pieces = credential.split(separator: 0x2F, omittingEmptySubsequences: false)
        guard pieces.count == 5, pieces[4].elementsEqual("aws4_request".utf8), !pieces[0].isEmpty, pieces[1].count == 8,
              pieces[1].allSatisfy({ (0x30...0x39).contains($0) }), !pieces[2].isEmpty, !pieces[3].isEmpty else {
            return .failure(.malformed("Credential"))
        }
        let headers = signed.split(separator: 0x3B).map { text($0).lowercased() }
        return .success(SigV4Authorization(accessKeyId: text(pieces[0]),
                                           scope: SigV4Scope(date: text(pieces[1]), region: text(pieces[2]), service: text(pieces[3])),
                                           signedHeaders: headers))
    }

    private static let credentialKey = Array("Credential=".utf8)
    private static let signedHeadersKey = Array("SignedHeaders=".utf8)
    private static let signatureKey = Array("Signature=".utf8)

    private static func text(_ bytes: ArraySlice<UInt8>) -> String { String(decoding: bytes, as: UTF8.self) }
}
