import AWSSigning
import HTTP1

/// What a request signed by the app with placeholder keys is re-signed with (issue 67): the real
/// credentials, the app's credential scope and the headers it signed, the payload hash, the time
/// and the `Host` the upstream receives.
struct SigV4Plan {
    /// The real credentials.
    let credentials: SigV4Credentials
    /// The scope the app signed for (its region and service, today's date).
    let scope: SigV4Scope
    /// The headers the app signed (its `SignedHeaders`), lowercase.
    let appSigned: [String]
    /// `x-amz-content-sha256` as the app sent it, or the body's hash.
    let payloadHash: String
    /// `YYYYMMDDTHHMMSSZ`.
    let timestamp: String
    /// The `Host` the upstream receives.
    let host: String
    /// False for S3 (its paths are neither normalized nor encoded twice).
    let normalizePath: Bool
    /// The sidecar hashed the body of an S3 request that said nothing of it (unsigned, with
    /// `signUnsigned`, or signed by an app that left the header out): S3 refuses a SigV4 request
    /// without `x-amz-content-sha256`, so the hash is sent too.
    var sendsPayloadHash = false
}

/// Re-signs a request: the app's `Authorization`, `X-Amz-Date` and `X-Amz-Security-Token` are
/// replaced, every other header the app signed is signed again as it goes upstream, headers
/// that change in transit (hop-by-hop ones, `Via`, and the trace context the sidecar's own span
/// replaces) are left unsigned.
enum SigV4Edit {
    /// Fields the re-signing replaces.
    static let replaced = ["authorization", "x-amz-date", "x-amz-security-token"]
    /// Fields never signed: they are rewritten between the app and the upstream.
    static let unsignable = ["connection", "keep-alive", "proxy-connection", "te", "trailer", "transfer-encoding",
                             "upgrade", "proxy-authorization", "via", "traceparent", "tracestate"]

    /// The head re-signed per `plan`. Read and written as bytes in place: names compared
    /// ignoring case, the canonical request written into one buffer (no String per field).
    static func apply(_ request: RequestHead, _ plan: SigV4Plan) -> RequestHead {
        let target: String
        switch request.target {
        case .origin(let path), .absolute(_, _, let path): target = path
        case .authority, .asterisk: target = "/"
        }
        let mark = target.utf8.firstIndex(of: 0x3F)
        let token = plan.credentials.sessionToken
        let (signedHeaders, addsPayloadHash, canonical) = request.withFieldSection { section in
            func present(_ name: String) -> Bool { section.lines.contains { section.name(of: $0, equalsIgnoringCase: name) } }
            // What the app signed and still goes upstream, with what the sidecar itself sets.
            var signed = ["host", "x-amz-date"]
            for name in plan.appSigned where name != "host" && !replaced.contains(name) && !unsignable.contains(name)
                && !signed.contains(name) && present(name) {
                signed.append(name)
            }
            if token != nil { signed.append("x-amz-security-token") }
            let hasPayloadHash = present("x-amz-content-sha256")
            let addsPayloadHash = plan.sendsPayloadHash && !hasPayloadHash
            if (hasPayloadHash || addsPayloadHash) && !signed.contains("x-amz-content-sha256") { signed.append("x-amz-content-sha256") }
            signed.sort()

            var canonical: [UInt8] = []
            canonical.reserveCapacity(512)
            SigV4Canonical.appendStart(&canonical, method: request.method, path: mark.map { target[..<$0] } ?? Substring(target),
                                       query: mark.map { target[target.index(after: $0)...] }, normalizePath: plan.normalizePath)
            for name in signed {
                switch name {
                case "host": SigV4Canonical.appendHeader(&canonical, name: name, value: plan.host)
                case "x-amz-date": SigV4Canonical.appendHeader(&canonical, name: name, value: plan.timestamp)
                case "x-amz-security-token": SigV4Canonical.appendHeader(&canonical, name: name, value: token ?? "")
                case "x-amz-content-sha256" where addsPayloadHash: SigV4Canonical.appendHeader(&canonical, name: name, value: plan.payloadHash)
                default:
                    SigV4Canonical.appendHeader(&canonical, name: name, values: section.lines.lazy
                        .filter { section.name(of: $0, equalsIgnoringCase: name) }.map { section.value(of: $0) })
                }
            }
            SigV4Canonical.appendEnd(&canonical, signedHeaders: signed, payloadHash: plan.payloadHash)
            return (signed, addsPayloadHash, canonical)
        }
        let stringToSign = SigV4Signer.stringToSign(timestamp: plan.timestamp, scope: plan.scope, canonicalRequest: canonical)
        let key = SigV4Signer.signingKey(secret: plan.credentials.secretAccessKey, scope: plan.scope)
        let authorization = SigV4Signer.authorization(accessKeyId: plan.credentials.accessKeyId, scope: plan.scope,
                                                      signedHeaders: signedHeaders,
                                                      signature: SigV4Signer.signatureBytes(key: key, stringToSign: stringToSign))
        return request.edited(target: request.target) { section, out in
            for line in section.lines where !section.name(of: line, equals: "authorization")
                && !section.name(of: line, equals: "x-amz-date") && !section.name(of: line, equals: "x-amz-security-token") {
                out.copy(line, from: section)
            }
            out.append(name: Array("X-Amz-Date".utf8), value: Array(plan.timestamp.utf8))
            if addsPayloadHash {
                out.append(name: Array("X-Amz-Content-Sha256".utf8), value: Array(plan.payloadHash.utf8))
            }
            if let token {
                out.append(name: Array("X-Amz-Security-Token".utf8), value: Array(token.utf8))
            }
            out.append(name: Array("Authorization".utf8), value: authorization)
        }
    }
}
