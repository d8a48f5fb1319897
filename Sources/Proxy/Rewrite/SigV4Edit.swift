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
    /// The sidecar hashed the body of an S3 request that said nothing of it (`signUnsigned`):
    /// S3 refuses a SigV4 request without `x-amz-content-sha256`, so the hash is sent too.
    var sendsPayloadHash = false
}

/// Re-signs a request: the app's `Authorization`, `X-Amz-Date` and `X-Amz-Security-Token` are
/// replaced, every other header the app signed is signed again as it goes upstream, headers
/// that change in transit (hop-by-hop ones, `Via`, and the trace context the sidecar's own span
/// replaces) are left unsigned.
enum SigV4Edit {
    /// Fields the re-signing replaces.
    static let replaced: Set<String> = ["authorization", "x-amz-date", "x-amz-security-token"]
    /// Fields never signed: they are rewritten between the app and the upstream.
    static let unsignable: Set<String> = ["connection", "keep-alive", "proxy-connection", "te", "trailer", "transfer-encoding",
                                          "upgrade", "proxy-authorization", "via", "traceparent", "tracestate"]

    /// The head re-signed per `plan`.
    static func apply(_ request: RequestHead, _ plan: SigV4Plan) -> RequestHead {
        let path: String
        switch request.target {
        case .origin(let target), .absolute(_, _, let target): path = target
        case .authority, .asterisk: path = "/"
        }
        let mark = path.utf8.firstIndex(of: 0x3F)
        var kept: [(name: String, value: String)] = [("host", plan.host)]
        var names: Set<String> = ["host"]
        request.withFieldSection { section in
            for line in section.lines {
                let name = String(decoding: UnsafeRawBufferPointer(rebasing: section.bytes[line.name]), as: UTF8.self).lowercased()
                guard !replaced.contains(name), name != "host" else { continue }
                kept.append((name, String(decoding: section.value(of: line), as: UTF8.self)))
                names.insert(name)
            }
        }
        kept.append(("x-amz-date", plan.timestamp))
        names.insert("x-amz-date")
        let addsPayloadHash = plan.sendsPayloadHash && !names.contains("x-amz-content-sha256")
        if addsPayloadHash {
            kept.append(("x-amz-content-sha256", plan.payloadHash))
            names.insert("x-amz-content-sha256")
        }
        if let token = plan.credentials.sessionToken {
            kept.append(("x-amz-security-token", token))
            names.insert("x-amz-security-token")
        }
        var signed = Set(plan.appSigned.filter { names.contains($0) && !unsignable.contains($0) && !replaced.contains($0) })
        signed.formUnion(["host", "x-amz-date"])
        if plan.credentials.sessionToken != nil { signed.insert("x-amz-security-token") }
        if names.contains("x-amz-content-sha256") { signed.insert("x-amz-content-sha256") }
        let signedHeaders = signed.sorted()
        let canonical = SigV4Canonical.request(method: request.method, path: mark.map { String(path[..<$0]) } ?? path,
                                               query: mark.map { String(path[path.index(after: $0)...]) },
                                               headers: kept, signedHeaders: signedHeaders, payloadHash: plan.payloadHash,
                                               normalizePath: plan.normalizePath)
        let stringToSign = SigV4Signer.stringToSign(timestamp: plan.timestamp, scope: plan.scope, canonicalRequest: canonical)
        let key = SigV4Signer.signingKey(secret: plan.credentials.secretAccessKey, scope: plan.scope)
        let authorization = SigV4Signer.authorization(accessKeyId: plan.credentials.accessKeyId, scope: plan.scope,
                                                      signedHeaders: signedHeaders,
                                                      signature: SigV4Signer.signature(key: key, stringToSign: stringToSign))
        return request.edited(target: request.target) { section, out in
            for line in section.lines {
                let name = UnsafeRawBufferPointer(rebasing: section.bytes[line.name])
                let lower = String(decoding: name, as: UTF8.self).lowercased()
                guard !replaced.contains(lower) else { continue }
                out.copy(line, from: section)
            }
            out.append(name: Array("X-Amz-Date".utf8), value: Array(plan.timestamp.utf8))
            if addsPayloadHash {
                out.append(name: Array("X-Amz-Content-Sha256".utf8), value: Array(plan.payloadHash.utf8))
            }
            if let token = plan.credentials.sessionToken {
                out.append(name: Array("X-Amz-Security-Token".utf8), value: Array(token.utf8))
            }
            out.append(name: Array("Authorization".utf8), value: Array(authorization.utf8))
        }
    }
}
