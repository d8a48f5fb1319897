import HTTP1

/// The exact token request to send: endpoint, header fields and form body.
///
/// Contains the client secret or assertion (in `Authorization` or the body): its ``description`` shows only
/// the method and URL, so interpolating a request into a log line is safe.
public struct TokenEndpointRequest: Sendable, Equatable, CustomStringConvertible, CustomDebugStringConvertible {
    /// Where to send it.
    public let endpoint: TokenEndpoint
    /// The method, `POST`.
    public let method: String
    /// The header fields, in order (including `Host` and `Content-Length`).
    public let fields: HTTPFields
    /// The `application/x-www-form-urlencoded` body.
    public let body: [UInt8]
    /// The requested `scope`, if any (part of the cache key).
    public let scope: String?
    /// The requested `audience`, if any (part of the cache key).
    public let audience: String?
    /// The requested `resource` (RFC 8707), if any (part of the cache key).
    public let resource: String?
    /// The DPoP key whose proof the request carries and the client certificate it is sent with
    /// (``bound(to:now:)``), nil for a plain request: the token in the answer is bound to them.
    public private(set) var binding: TokenBinding?
    /// The DPoP nonce the proof carries (nil: none, or no proof). A `use_dpop_nonce` challenge
    /// naming another nonce calls for a retry, even when a concurrent answer already stored it.
    public private(set) var sentNonce: String?
    /// Which field of the answer holds the token: `access_token`, or `id_token` for a Google
    /// service account asked for an ID token (`targetAudience`).
    public var tokenField: TokenField = .accessToken

    /// The field of a token endpoint's answer that holds the token.
    public enum TokenField: String, Sendable, Equatable {
        /// `access_token` (RFC 6749 §5.1).
        case accessToken = "access_token"
        /// `id_token` (OpenID Connect; Google's answer to a `target_audience` assertion).
        case idToken = "id_token"
        /// AWS credentials: STS's `Credentials` (XML) or a container endpoint's JSON
        /// (``AWSCredentialsAnswer``), as one ``SigV4Credentials/tokenValue``.
        case awsCredentials = "Credentials"
    }

    /// Creates a request from finished parts; the builders (``mca(serverURL:tenantId:clientId:secret:)``,
    /// ``oauth2(tokenURL:clientId:secret:authentication:scope:audience:resource:extraParameters:)``) are
    /// the usual way.
    public init(endpoint: TokenEndpoint, method: String = "POST", fields: HTTPFields, body: [UInt8],
                scope: String? = nil, audience: String? = nil, resource: String? = nil) {
        self.endpoint = endpoint
        self.method = method
        self.fields = fields
        self.body = body
        self.scope = scope
        self.audience = audience
        self.resource = resource
    }

    /// `scheme://authority` of the endpoint: where its DPoP nonces are remembered.
    public var origin: String { endpoint.scheme + "://" + endpoint.authority }

    /// The same request bound to `binding`: with a `DPoP` proof header (RFC 9449 §5) signed by
    /// its key when it has one (`htm` POST, `htu` the endpoint without its query, a fresh `jti`,
    /// the nonce the token server gave last).
    public func bound(to binding: TokenBinding, now: Double) throws(TokenFetchError) -> TokenEndpointRequest {
        var fields = self.fields
        let nonce = binding.nonces?.nonce(for: origin)
        do {
            if let proof = try binding.proof(method: method, origin: origin, path: endpoint.path, accessToken: nil,
                                             nonce: nonce, now: now) {
                fields.append("DPoP", proof)
            }
        } catch {
            throw TokenFetchError(.clientAuthentication("dpop: the proof could not be signed (\(error))"))
        }
        var bound = TokenEndpointRequest(endpoint: endpoint, method: method, fields: fields, body: body,
                                         scope: scope, audience: audience, resource: resource)
        bound.binding = binding
        bound.tokenField = tokenField
        bound.sentNonce = binding.dpopKey == nil ? nil : nonce
        return bound
    }

    /// Head and body as sent on the wire.
    public var bytes: [UInt8] {
        HeadSerializer.request(method: method, target: endpoint.path, version: .http1_1, fields: fields) + body
    }

    /// `POST https://host/path` — never the secret.
    public var description: String { "\(method) \(endpoint)" }

    /// Same as ``description``.
    public var debugDescription: String { description }

    /// The standard header fields for a form POST to `endpoint`, with `Authorization` when given.
    static func formFields(endpoint: TokenEndpoint, bodyLength: Int, authorization: String?) -> HTTPFields {
        var fields = HTTPFields()
        fields.append("Host", endpoint.authority)
        fields.append("User-Agent", "token-sidecar")
        fields.append("Accept", "application/json")
        fields.append("Content-Type", "application/x-www-form-urlencoded")
        fields.append("Content-Length", String(bodyLength))
        if let authorization { fields.append("Authorization", authorization) }
        fields.append("Connection", "close")
        return fields
    }
}
