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

    /// Parses `value`.
    public static func parse(_ value: String) -> Result<SigV4Authorization, Problem> {
        let trimmed = value.drop { $0 == " " }
        guard let space = trimmed.firstIndex(of: " ") else { return .failure(.otherScheme(String(trimmed.prefix(32)))) }
        let scheme = String(trimmed[..<space])
        guard scheme == SigV4Signer.algorithm else { return .failure(.otherScheme(String(scheme.prefix(32)))) }
        var credential: Substring?, signed: Substring?, signature: Substring?
        for part in trimmed[space...].split(separator: ",") {
            let item = part.drop { $0 == " " }
            if item.hasPrefix("Credential=") { credential = item.dropFirst("Credential=".count) }
            else if item.hasPrefix("SignedHeaders=") { signed = item.dropFirst("SignedHeaders=".count) }
            else if item.hasPrefix("Signature=") { signature = item.dropFirst("Signature=".count) }
        }
        guard let credential else { return .failure(.malformed("Credential")) }
        guard let signed, !signed.isEmpty else { return .failure(.malformed("SignedHeaders")) }
        guard let signature, !signature.isEmpty else { return .failure(.malformed("Signature")) }
        let pieces = credential.split(separator: "/", omittingEmptySubsequences: false)
        guard pieces.count == 5, pieces[4] == "aws4_request", !pieces[0].isEmpty, pieces[1].count == 8,
              pieces[1].allSatisfy(\.isNumber), !pieces[2].isEmpty, !pieces[3].isEmpty else {
            return .failure(.malformed("Credential"))
        }
        let headers = signed.split(separator: ";").map { $0.lowercased() }
        return .success(SigV4Authorization(accessKeyId: String(pieces[0]),
                                           scope: SigV4Scope(date: String(pieces[1]), region: String(pieces[2]), service: String(pieces[3])),
                                           signedHeaders: headers))
    }
}
