import HTTP1
import TokenManager

/// The tokens of a route that fetches them per request: for the scopes or audience the request
/// names (within what the route allows), and with `clientAuthorization: exchange` for the
/// caller whose bearer token it carries (RFC 8693). Built once per configuration; every
/// worker uses it for every request of the route. A class: a route decision carries one
/// reference, not the sets and strings.
final class RouteTokens: Sendable {
    /// The route's variants (one managed credential per key).
    let variants: TokenVariants
    /// Whether the caller's `Authorization: Bearer` is the subject of a token exchange.
    let exchanges: Bool
    /// The request field naming scopes (removed before forwarding), if any.
    let scopeHeader: String?
    /// The scopes a request may name.
    let allowedScopes: Set<String>
    /// The request field naming the audience (removed before forwarding), if any.
    let audienceHeader: String?
    /// The audiences a request may name.
    let allowedAudiences: Set<String>

    /// A route's per-request tokens from its configuration.
    init(variants: TokenVariants, exchanges: Bool, scopeHeader: String?, allowedScopes: [String],
         audienceHeader: String?, allowedAudiences: [String]) {
        self.variants = variants
        self.exchanges = exchanges
        self.scopeHeader = scopeHeader
        self.allowedScopes = Set(allowedScopes)
        self.audienceHeader = audienceHeader
        self.allowedAudiences = Set(allowedAudiences)
    }

    /// Whether `line` is one of the route's own request fields, which never reach the upstream.
    func consumes(_ line: FieldLine, in section: FieldSectionView) -> Bool {
        if let scopeHeader, section.name(of: line, equalsIgnoringCase: scopeHeader) { return true }
        if let audienceHeader, section.name(of: line, equalsIgnoringCase: audienceHeader) { return true }
        return false
    }

    /// The credential for `head`'s variant, or the error to answer with (nothing is fetched
    /// then): no usable subject → 401, a scope or audience the route does not allow → 403.
    /// `wallClock`: now in seconds since 1970 (a subject JWT's `exp`).
    func credential(for head: borrowing RequestHead, wallClock: Double) -> Result<(ManagedCredential, TokenVariantKey), ProxyError> {
        var scopes: [Substring] = []
        var audience: String?
        for field in head.fields {
            if let scopeHeader, field.nameEquals(ignoringCase: scopeHeader) {
                for scope in field.value.split(whereSeparator: { $0 == " " || $0 == "\t" }) {
                    guard allowedScopes.contains(String(scope)) else { return .failure(Self.refused(scope: scope)) }
                    scopes.append(scope)
                }
            } else if let audienceHeader, field.nameEquals(ignoringCase: audienceHeader), !field.value.isEmpty {
                guard audience == nil || audience == field.value else {
                    return .failure(.badRequest("the request names more than one audience in \(audienceHeader)"))
                }
                guard allowedAudiences.contains(field.value) else { return .failure(Self.refused(audience: field.value)) }
                audience = field.value
            }
        }
        var subject: String?
        if exchanges {
            switch Self.bearerToken(in: head.fields) {
            case .success(let token): subject = token
            case .failure(let error): return .failure(error)
            }
        }
        let key = TokenVariantKey(scopes: scopes, audience: audience, subject: subject)
        // A usable exchanged token implies an unexpired subject (its life ends before the
        // subject's): only without one is the subject's own expiry read.
        if let held = variants.existing(for: key), held.currentToken() != nil { return .success((held, key)) }
        if let subject, let exp = JWTExpiry.expiry(of: subject), exp <= wallClock + Self.subjectMargin {
            // Checked before a variant is made: an expired caller takes no cache slot.
            return .failure(ProxyError(status: 401, type: "http_request_denied",
                                       message: "the caller's token expired; send a current one",
                                       challenge: "Bearer error=\"invalid_token\", error_description=\"the token expired\""))
        }
        let credential = variants.credential(for: key, subject: subject)
        if credential.currentToken() == nil, let wait = variants.gate.remaining(at: .now) {
            // The token server failed for reasons not about this caller: no new request to it
            // before its backoff ends.
            let seconds = Int((Double(wait.components.seconds) + Double(wait.components.attoseconds) / 1e18).rounded(.up))
            return .failure(ProxyError(status: 503, type: "proxy_internal_error",
                                       message: "the token server for credential '\(variants.name)' is failing; retry shortly",
                                       retryAfter: max(1, seconds)))
        }
        return .success((credential, key))
    }

    /// A subject with less than this left is treated as expired: its exchanged token would be
    /// over before it is used.
    static let subjectMargin: Double = 1

    /// The caller's bearer token: exactly one `Authorization: Bearer <token68>` field.
    static func bearerToken(in fields: HTTPFields) -> Result<String, ProxyError> {
        var found: String?
        for field in fields where field.nameEquals("authorization") {
            guard found == nil else { return .failure(unauthorized("the request has more than one Authorization field", error: "invalid_request")) }
            found = field.value
        }
        guard let value = found else {
            return .failure(unauthorized("this route acts for the caller: send the caller's token as Authorization: Bearer <token>", error: nil))
        }
        let utf8 = Array(value.utf8)
        let scheme = Array("bearer".utf8)
        guard utf8.count > scheme.count + 1,
              zip(utf8.prefix(scheme.count), scheme).allSatisfy({ ($0 | 0x20) == $1 }), utf8[scheme.count] == 0x20 else {
            return .failure(unauthorized("the Authorization field is not a Bearer token", error: "invalid_request"))
        }
        let token = utf8.dropFirst(scheme.count).drop { $0 == 0x20 }
        // RFC 6750 §2.1 b64token: 1*( ALPHA / DIGIT / "-" / "." / "_" / "~" / "+" / "/" ) *"=".
        var sawPadding = false
        let valid = token.first.map { $0 != 0x3D } == true && token.allSatisfy { byte in
            if byte == 0x3D { sawPadding = true; return true }
            guard !sawPadding else { return false }
            let lower = byte | 0x20
            return (byte >= 0x30 && byte <= 0x39) || (lower >= 0x61 && lower <= 0x7A) || byte == 0x2D || byte == 0x2E || byte == 0x5F || byte == 0x7E || byte == 0x2B || byte == 0x2F
        }
        guard valid else { return .failure(unauthorized("the Bearer token has characters a token cannot have", error: "invalid_request")) }
        return .success(String(decoding: token, as: UTF8.self))
    }

    private static func unauthorized(_ message: String, error: String?) -> ProxyError {
        ProxyError(status: 401, type: "http_request_denied", message: message,
                   challenge: error.map { "Bearer error=\"\($0)\"" } ?? "Bearer")
    }

    private static func refused(scope: Substring) -> ProxyError {
        let shown = printable(scope)
        return ProxyError(status: 403, type: "http_request_denied",
                          message: "this route does not allow the scope \(shown); ask only for scopes listed under allowedScopes",
                          details: ["refused_scope": shown])
    }

    private static func refused(audience: String) -> ProxyError {
        let shown = printable(Substring(audience))
        return ProxyError(status: 403, type: "http_request_denied",
                          message: "this route does not allow the audience \(shown); ask only for one listed under allowedAudiences",
                          details: ["refused_audience": shown])
    }

    /// At most 128 printable ASCII characters of what the app sent (it is echoed back).
    private static func printable(_ text: Substring) -> String {
        String(String.UnicodeScalarView(text.unicodeScalars.prefix(128).map { $0.isASCII && $0.value >= 0x20 && $0.value < 0x7F ? $0 : "?" }))
    }
}
