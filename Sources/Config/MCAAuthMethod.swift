/// How an `mca` credential proves itself to the Mobile Client Access server.
public enum MCAAuthMethod: String, Sendable, Equatable, CaseIterable {
    /// `Authorization: Basic base64(clientId:secret)` (the default; the SDK's `getAuthorizationHeader`).
    case secret
    /// `Authorization: IMFCert <JWS>`: an RS256 JWS over `{"timestamp":<ms>}` signed with the
    /// client certificate's key, the certificate in `x5c` (the SDK's `getAuthorizationHeaderByCertificate`).
    case certificate
}
