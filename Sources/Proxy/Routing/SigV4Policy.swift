import AWSSigning
import Config
import HTTP1

/// What an app's SigV4-signed request is re-signed as, decided from its head: the scope and
/// headers it signed, and the payload hash it declared.
struct SigV4Request: Sendable, Equatable {
    /// The app's credential scope (region and service; the date is re-made at signing).
    let scope: SigV4Scope
    /// The headers the app signed, lowercase.
    let appSigned: [String]
    /// `x-amz-content-sha256` as the app sent it (a hex hash, `UNSIGNED-PAYLOAD`,
    /// `STREAMING-UNSIGNED-PAYLOAD-TRAILER`), nil when it sent none (the body's hash is then needed).
    let contentSHA256: String?
    /// S3's paths are neither normalized nor encoded twice.
    var normalizePath: Bool { scope.service != "s3" }
    /// The app declared no payload hash (every SDK but S3's): the sidecar hashes the body, which
    /// it must then hold whole before the head can go (at most ``hashedBodyLimit`` bytes).
    var needsBodyHash: Bool { contentSHA256 == nil }
    /// The largest body the sidecar holds to hash (the route's `maxHashedBody`, 1 MiB unless
    /// set: an SQS message, a DynamoDB batch of small items; S3 uploads declare their hash or
    /// stream unsigned). Larger: 413.
    var hashedBodyLimit = SigV4RouteSettings.defaultMaxHashedBody
}

/// Whether a request for a `sigv4` route is re-signed, or refused before anything is sent:
/// another access key id than the placeholder, or a region or service outside the route's
/// lists (403); a presigned URL, per-chunk signatures, SigV4A, an unsigned request without
/// `signUnsigned` (400, naming the reason).
enum SigV4Policy {
    private static let signatureParameter = Array("X-Amz-Signature=".utf8)
    private static let credentialParameter = Array("X-Amz-Credential=".utf8)

    /// The decision for `head`.
    static func decide(_ head: borrowing RequestHead, settings: SigV4RouteSettings) -> Result<SigV4Request, ProxyError> {
        // Only the two fields decided on become Strings (by name, ignoring case, in place).
        var authorizations: [String] = []
        var content: String?
        head.withFieldSection { section in
            for line in section.lines {
                if section.name(of: line, equals: "authorization") {
                    authorizations.append(String(decoding: section.value(of: line), as: UTF8.self))
                } else if content == nil, section.name(of: line, equals: "x-amz-content-sha256") {
                    content = String(decoding: section.value(of: line), as: UTF8.self)
                }
            }
        }
        let query: String
        switch head.target {
        case .origin(let path), .absolute(_, _, let path):
            query = path.utf8.firstIndex(of: 0x3F).map { String(path[path.index(after: $0)...]) } ?? ""
        case .authority, .asterisk: query = ""
        }
        let presigned = query.utf8.withContiguousStorageIfAvailable { bytes in
            let raw = UnsafeRawBufferPointer(bytes)
            return ByteSearch.find(signatureParameter, in: raw) != nil || ByteSearch.find(credentialParameter, in: raw) != nil
        } ?? false
        if presigned {
            return .failure(.badRequest("presigned URLs are not re-signed: sign the request with the placeholder keys in its Authorization"))
        }
        if let content, content.hasPrefix(SigV4Body.streamingSignedPrefix) {
            return .failure(.badRequest("per-chunk signatures (\(content)) are not re-signed: use the SDK's default unsigned streaming upload"))
        }
        if authorizations.isEmpty {
            guard settings.signUnsigned else {
                return .failure(.badRequest("the request is not signed (SigV4 with the placeholder access key id is required on this route)"))
            }
            return unsigned(head, content: content, settings: settings)
        }
        guard authorizations.count == 1, let value = authorizations.first else {
            return .failure(.badRequest("the request has several Authorization fields"))
        }
        let parsed: SigV4Authorization
        switch SigV4Authorization.parse(value) {
        case .success(let authorization): parsed = authorization
        case .failure(.otherScheme(let scheme)):
            let why = scheme == "AWS4-ECDSA-P256-SHA256" ? "SigV4A (AWS4-ECDSA-P256-SHA256) is not re-signed" : "the request is not signed with SigV4 (\(scheme))"
            return .failure(.badRequest(why))
        case .failure(.malformed(let part)):
            return .failure(.badRequest("the SigV4 Authorization's \(part) does not parse"))
        }
        guard parsed.accessKeyId == settings.placeholderAccessKeyId else {
            return .failure(.denied("the request is signed with another access key id than this route's placeholder; it is not forwarded"))
        }
        return allowed(SigV4Request(scope: parsed.scope, appSigned: parsed.signedHeaders, contentSHA256: content,
                                    hashedBodyLimit: settings.maxHashedBody), settings: settings)
    }

    /// A request without `Authorization` on a route with `signUnsigned`: region and service from
    /// its host; it is signed for its host, `content-type` and every `x-amz-*` field it carries.
    private static func unsigned(_ head: borrowing RequestHead, content: String?,
                                 settings: SigV4RouteSettings) -> Result<SigV4Request, ProxyError> {
        let fields = head.withFieldSection { section in
            section.lines.compactMap { line -> (String, String)? in
                let name = String(decoding: UnsafeRawBufferPointer(rebasing: section.bytes[line.name]), as: UTF8.self).lowercased()
                guard name == "host" || name.hasPrefix("x-amz-") else { return nil }
                return (name, String(decoding: section.value(of: line), as: UTF8.self))
            }
        }
        let host: String
        if case .absolute(_, let authority, _) = head.target { host = authority.description } else { host = fields.first { $0.0 == "host" }?.1 ?? "" }
        guard let endpoint = SigV4Endpoint.scope(forHost: host) else {
            return .failure(.badRequest("the request is not signed and its host is not an AWS endpoint whose region and service are known"))
        }
        let signed = Set(fields.map(\.0).filter { $0.hasPrefix("x-amz-") }).union(["host", "content-type"]).sorted()
        return allowed(SigV4Request(scope: SigV4Scope(date: "", region: endpoint.region, service: endpoint.service), appSigned: signed,
                                    contentSHA256: content, hashedBodyLimit: settings.maxHashedBody), settings: settings)
    }

    /// `request` when its region and service are among the route's lists, else a 403.
    private static func allowed(_ request: SigV4Request, settings: SigV4RouteSettings) -> Result<SigV4Request, ProxyError> {
        if !settings.allowedRegions.isEmpty && !settings.allowedRegions.contains(request.scope.region) {
            return .failure(.denied("region \(request.scope.region) is not among the route's allowedRegions"))
        }
        if !settings.allowedServices.isEmpty && !settings.allowedServices.contains(request.scope.service) {
            return .failure(.denied("service \(request.scope.service) is not among the route's allowedServices"))
        }
        return .success(request)
    }
}
