/// A credential whose token comes from an IBM Mobile Client Access server
/// (type `mca`): `POST {serverUrl}/authorization/v1/apps/{tenantId}/token`
/// with the client id and secret. Fields missing from the file are
/// discovered from Cloud Foundry's `VCAP_SERVICES` / `VCAP_APPLICATION`.
public struct MCAConfig: Sendable, Equatable {
    /// The authorization server's base URL (its path is kept, e.g. `/imf-authserver`).
    public var serverUrl: EndpointURL
    /// The tenant (application) id; `appId` in the file is an alias.
    public var tenantId: String
    /// The client id; nil with `auth: certificate` and no `clientId`, meaning the client
    /// certificate subject's CN (read when the credential is built).
    public var clientId: String?
    /// How the client authenticates (default `.secret`).
    public var auth: MCAAuthMethod
    /// Where the client secret comes from (`.inline` also for a secret from `VCAP_SERVICES`);
    /// nil with `auth: certificate`.
    public var secret: SecretSource?
    /// The certificate and key that sign the `IMFCert` assertion, with `auth: certificate`.
    public var certificate: ClientCertificateFiles?
    /// Renewal timing.
    public var fetch: TokenFetchSettings
    /// TLS to the token server (only meaningful for an https `serverUrl`).
    public var tls: TLSSettings
    /// Where `serverUrl`, `tenantId`, `clientId` and `secret` came from, keyed by those names.
    public var origins: [String: ValueOrigin]

    /// Creates a configuration. With `origins` nil, every field counts as
    /// written in the file (the secret as `.environment` for an `.env` source).
    public init(
        serverUrl: EndpointURL,
        tenantId: String,
        clientId: String?,
        secret: SecretSource?,
        auth: MCAAuthMethod = .secret,
        certificate: ClientCertificateFiles? = nil,
        fetch: TokenFetchSettings = .default,
        tls: TLSSettings = .default,
        origins: [String: ValueOrigin]? = nil
    ) {
        self.serverUrl = serverUrl
        self.tenantId = tenantId
        self.clientId = clientId
        self.secret = secret
        self.auth = auth
        self.certificate = certificate
        self.fetch = fetch
        self.tls = tls
        self.origins = origins ?? Self.fileOrigins(secret: secret)
    }

    /// The names of the fields whose origin is recorded, in render order.
    public static let discoverableFields = ["serverUrl", "tenantId", "clientId", "secret"]

    /// Origins for a credential written entirely in the file.
    static func fileOrigins(secret: SecretSource?) -> [String: ValueOrigin] {
        var origins: [String: ValueOrigin] = ["serverUrl": .file, "tenantId": .file, "clientId": .file]
        switch secret {
        case .env(let name): origins["secret"] = .environment(name)
        case .some: origins["secret"] = .file
        case .none: break
        }
        return origins
    }

    /// The token endpoint's path: `serverUrl`'s path (trailing slashes
    /// dropped) + `/authorization/v1/apps/{tenantId}/token`, with `tenantId`
    /// percent-encoded as one path segment.
    public var tokenPath: String {
        var base = Substring(serverUrl.path)
        while base.hasSuffix("/") { base = base.dropLast() }
        return "\(base)/authorization/v1/apps/\(Self.encodePathSegment(tenantId))/token"
    }

    /// Percent-encodes everything but RFC 3986 unreserved characters.
    static func encodePathSegment(_ text: String) -> String {
        var out = ""
        for byte in text.utf8 {
            let isUnreserved = (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A)
                || (byte >= 0x30 && byte <= 0x39) || byte == 0x2D || byte == 0x2E || byte == 0x5F || byte == 0x7E
            if isUnreserved {
                out.unicodeScalars.append(Unicode.Scalar(byte))
            } else {
                let hex = String(byte, radix: 16, uppercase: true)
                out += "%" + (hex.count == 1 ? "0" + hex : hex)
            }
        }
        return out
    }
}
