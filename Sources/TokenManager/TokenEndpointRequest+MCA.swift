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
        guard !tenantId.isEmpty else { throw .missingSetting("tenantId") }
        guard !clientId.isEmpty else { throw .missingSetting("clientId") }
        guard !secret.isEmpty else { throw .missingSetting("secret") }
        let server = try TokenEndpoint(url: serverURL)
        guard !server.path.contains("?") else { throw .invalidURL("the MCA server URL must not have a query") }
        var base = Substring(server.path)
        while base.hasSuffix("/") { base = base.dropLast() }
        let path = base + "/authorization/v1/apps/" + percentEncodePathSegment(tenantId) + "/token"
        let endpoint = TokenEndpoint(scheme: server.scheme, host: server.host, port: server.port, path: String(path))
        let body = Array("grant_type=client_credentials".utf8)
        let fields = formFields(endpoint: endpoint, bodyLength: body.count, basicCredentials: clientId + ":" + secret)
        return TokenEndpointRequest(endpoint: endpoint, fields: fields, body: body)
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
