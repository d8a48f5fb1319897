extension TokenEndpointRequest {
    /// The IBM Mobile Client Access token request, as the `bms-mca-oauth-sdk` sent it:
    /// `POST {serverURL}/authorization/v1/apps/{tenantId}/token` with
    /// `Authorization: Basic base64(clientId:secret)` (the raw id and secret, not form-encoded)
    /// and the body `grant_type=client_credentials`.
    ///
    /// - Parameters:
    ///   - serverURL: the MCA server URL, with or without a trailing `/` (no query).
    ///   - tenantId: the application's tenant id (a.k.a. appId); percent-encoded as a path segment.
    public static func mca(serverURL: String, tenantId: String, clientId: String, secret: String) throws(TokenEndpointError) -> TokenEndpointRequest {
        guard !clientId.isEmpty else { throw .missingSetting("clientId") }
        guard !secret.isEmpty else { throw .missingSetting("secret") }
        let endpoint = try mcaEndpoint(serverURL: serverURL, tenantId: tenantId)
        let body = Array("grant_type=client_credentials".utf8)
        let fields = formFields(endpoint: endpoint, bodyLength: body.count,
                                authorization: "Basic " + Base64.encode(Array((clientId + ":" + secret).utf8)))
        return TokenEndpointRequest(endpoint: endpoint, fields: fields, body: body)
    }

    /// The MCA certificate flow, as the SDK's `getAuthorizationHeaderByCertificate` sent it: the
    /// same endpoint as ``mca(serverURL:tenantId:clientId:secret:)``, with
    /// `Authorization: IMFCert <assertion>` (a compact RS256 JWS whose header carries the
    /// certificate in `x5c`, see ``MCACertificateAssertion``) and the body
    /// `grant_type=client_credentials&client_id=<clientId>`.
    public static func mcaCertificate(serverURL: String, tenantId: String, clientId: String,
                                      assertion: String) throws(TokenEndpointError) -> TokenEndpointRequest {
        guard !clientId.isEmpty else { throw .missingSetting("clientId") }
        guard !assertion.isEmpty else { throw .missingSetting("assertion") }
        let endpoint = try mcaEndpoint(serverURL: serverURL, tenantId: tenantId)
        let body = Array(FormURLEncoding.encode([("grant_type", "client_credentials"), ("client_id", clientId)]).utf8)
        let fields = formFields(endpoint: endpoint, bodyLength: body.count, authorization: "IMFCert " + assertion)
        return TokenEndpointRequest(endpoint: endpoint, fields: fields, body: body)
    }

    /// `{serverURL}/authorization/v1/apps/{tenantId}/token`.
    static func mcaEndpoint(serverURL: String, tenantId: String) throws(TokenEndpointError) -> TokenEndpoint {
        guard !tenantId.isEmpty else { throw .missingSetting("tenantId") }
        let server = try TokenEndpoint(url: serverURL)
        guard !server.path.contains("?") else { throw .invalidURL("the MCA server URL must not have a query") }
        var base = Substring(server.path)
        while base.hasSuffix("/") { base = base.dropLast() }
        let path = base + "/authorization/v1/apps/" + percentEncodePathSegment(tenantId) + "/token"
        return TokenEndpoint(scheme: server.scheme, host: server.host, port: server.port, path: String(path))
    }

    /// Percent-encodes everything but RFC 3986 unreserved characters.
    static func percentEncodePathSegment(_ text: String) -> String {
        let hex: [UInt8] = Array("0123456789ABCDEF".utf8)
        var out: [UInt8] = []
        for byte in text.utf8 {
            switch byte {
            case 0x41...0x5A, 0x61...0x7A, 0x30...0x39, 0x2D, 0x2E, 0x5F, 0x7E: out.append(byte)
            default: out += [0x25, hex[Int(byte >> 4)], hex[Int(byte & 0x0F)]]
            }
        }
        return String(decoding: out, as: UTF8.self)
    }
}
