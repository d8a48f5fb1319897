/// How an `oauth2` credential proves itself to the token endpoint.
public enum ClientAuthMethod: String, Sendable, Equatable, CaseIterable {
    /// `client_secret_basic` (RFC 6749 §2.3.1): HTTP Basic with the client id and secret (the default).
    case basic
    /// `client_secret_post` (RFC 6749 §2.3.1): `client_id` and `client_secret` as form parameters.
    case post
    /// `private_key_jwt` (RFC 7523 §2.2, OpenID Connect Core §9): a JWT signed with the client's
    /// private key (RS256 or ES256) as `client_assertion`; no secret exists.
    case privateKeyJWT = "private_key_jwt"
    /// `client_secret_jwt` (RFC 7523 §2.2): a JWT signed HS256 with the client secret as `client_assertion`.
    case clientSecretJWT = "client_secret_jwt"
    /// A JWT issued by someone else (a Kubernetes projected service-account token, a SPIFFE
    /// JWT-SVID), read from `assertionFile` before every fetch and sent verbatim as `client_assertion`.
    case assertionFile = "assertion_file"
    /// `tls_client_auth` (RFC 8705 §2): the client certificate of the TLS handshake authenticates;
    /// only `client_id` is in the form.
    case tlsClientAuth = "tls_client_auth"
    /// `self_signed_tls_client_auth` (RFC 8705 §2.2): the same, with a self-signed certificate the
    /// server has registered for the client (no CA involved).
    case selfSignedTLSClientAuth = "self_signed_tls_client_auth"
    /// No client authentication (a public client, RFC 6749 §2.1): `client_id` in the form when
    /// set. Only for token exchange, where the subject token is the proof.
    case none

    /// Whether the method needs a client secret (`secret`, `secretFile` or `secretEnv`).
    public var needsSecret: Bool {
        switch self {
        case .basic, .post, .clientSecretJWT: return true
        case .privateKeyJWT, .assertionFile, .tlsClientAuth, .selfSignedTLSClientAuth, .none: return false
        }
    }

    /// Whether the TLS client certificate authenticates (`tls_client_auth`, `self_signed_tls_client_auth`).
    public var usesClientCertificate: Bool { self == .tlsClientAuth || self == .selfSignedTLSClientAuth }

    /// Whether the method builds and signs its own JWT assertion for every fetch.
    public var signsAssertion: Bool { self == .privateKeyJWT || self == .clientSecretJWT }
}
