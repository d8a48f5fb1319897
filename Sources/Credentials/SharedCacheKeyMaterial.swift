import Config
import Crypto
import Foundation
import TokenManager

/// What determines a credential's token, as text for the shared cache key: the kind, the token
/// endpoint, the client id, the client authentication method and what is asked for (scope,
/// audience, resource, extra parameters; for MCA the server URL and tenant). Never a secret:
/// replicas of the same client share one entry, different clients never do. Where a file rather
/// than the configuration says who the client is (a Google key file's `client_email`, a container
/// credentials endpoint's authorization token), the file is read for it; one that cannot be read
/// shares nothing. The text is hashed (``SharedTokenCache/binding(material:)``) before it names
/// anything in Redis.
enum SharedCacheKeyMaterial {
    /// The material for `credential`, nil for a static token (nothing to share) and a
    /// sender-constrained one (DPoP, or a client certificate: bound to what this process holds).
    static func make(_ credential: CredentialConfig) -> String? {
        var parts: [String]
        switch credential.kind {
        case .staticToken:
            return nil
        case .aws(let aws):
            // Replicas assuming the same role (or reading the same container endpoint) share one
            // set of temporary keys, sealed like a token.
            switch aws.source {
            case .files: return nil
            case .webIdentity(let identity):
                parts = ["aws_web_identity", identity.stsEndpoint.description, identity.roleArn, identity.sessionName,
                         identity.duration.map { "\($0.components.seconds)" } ?? ""]
            case .containerCredentials(let container):
                // Every pod on a node asks the same endpoint (EKS Pod Identity's 169.254.170.23):
                // whose keys it answers with is the authorization token's.
                var identity = ""
                if let file = container.authorizationTokenFile {
                    guard let token = try? String(contentsOfFile: file, encoding: .utf8) else { return nil }
                    identity = tokenIdentity(token.trimmingCharacters(in: .whitespacesAndNewlines))
                }
                parts = ["aws_container_credentials", container.uri.description, identity]
            }
        case .mca(let mca):
            parts = ["mca", mca.serverUrl.description, mca.tenantId, mca.clientId ?? "", "\(mca.auth)"]
        case .googleServiceAccount(let google):
            // The same path holds another account's key in another deployment: the account names it.
            guard let data = FileManager.default.contents(atPath: google.keyFile),
                  let key = try? GoogleServiceAccountKey(json: Array(data)) else { return nil }
            parts = ["google_service_account", key.clientEmail, google.scope ?? "", google.targetAudience ?? "", google.subject ?? ""]
        case .oauth2(let oauth):
            // Sender-constrained tokens are presented with what they were requested with — this
            // replica's DPoP key, the certificate pair it read — which another replica's copy
            // would not carry: each replica fetches its own.
            if oauth.dpop != nil || oauth.auth.usesClientCertificate { return nil }
            parts = ["oauth2", oauth.tokenUrl.description, oauth.clientId, "\(oauth.auth)",
                     oauth.scope ?? "", oauth.audience ?? "", oauth.resource ?? ""]
            parts += oauth.params.map { "\($0.name)=\($0.value)" }.sorted()
            // A JWT bearer grant's subject is part of who the token is for (appended only for
            // it, so the keys of client-credentials credentials stay what they were).
            if case .jwtBearer(let subject) = oauth.grant { parts += ["jwt_bearer", subject ?? oauth.clientId] }
            // A refresh token is someone's consent: two credentials of one configuration are two
            // users, never one entry (the replicas of one credential share its name; each has its
            // own file, at a path that may differ from pod to pod). Deployments for other users
            // that share a Redis keep apart with their own keyPrefix.
            if case .refreshToken = oauth.grant { parts += ["refresh_token", credential.name] }
        }
        // Length-prefixed, so no choice of values can make two different credentials collide.
        return parts.map { "\($0.utf8.count):\($0)" }.joined(separator: "|")
    }

    /// Who a bearer token speaks for: a JWT's issuer and subject (a Kubernetes service account's
    /// projected token names `system:serviceaccount:NAMESPACE:NAME`, the same in each of its
    /// pods and rotations), else the token's SHA-256 (an opaque token: its holders alone).
    static func tokenIdentity(_ token: String) -> String {
        if let claims = JWTPayload.claims(Subject.self, of: token) {
            return "jwt:\(claims.iss.utf8.count):\(claims.iss)|\(claims.sub)"
        }
        return "sha256:" + Digest.hex(Digest.sha256(Array(token.utf8)))
    }

    /// Whose a JWT is: its issuer and subject.
    private struct Subject: Decodable {
        let iss: String
        let sub: String
    }
}
