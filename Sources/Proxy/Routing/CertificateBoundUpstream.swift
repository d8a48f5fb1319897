import Crypto
import EventLoop
import TokenManager

/// The upstream of a route with `clientCertificate: credential`: its TLS connections present the
/// client certificate the request's token was requested with (RFC 8705 §3), so a
/// certificate-bound token always travels over a connection made with its own certificate.
/// Each certificate gets its own TLS context and its own pool key: after a rotation, pooled
/// connections made with the old certificate serve only the old token, never the new one.
///
/// Shared by every worker (a mutex around a small table; one lookup per request on such routes).
final class CertificateBoundUpstream: Sendable {
    /// Certificates remembered at once (the current and the few before it).
    static let capacity = 4

    /// The route's own target: no client certificate.
    private let base: UpstreamTarget
    private let caFile: String?
    private let insecureSkipVerify: Bool
    private let targets = Locked<[(identity: ClientIdentity, target: UpstreamTarget)]>([])

    /// The route's upstream as it is without a certificate (`base`) and how it verifies the server.
    init(base: UpstreamTarget, caFile: String?, insecureSkipVerify: Bool) {
        self.base = base
        self.caFile = caFile
        self.insecureSkipVerify = insecureSkipVerify
    }

    /// The target presenting `identity`. Without one, or when no TLS context can be made with
    /// it, the route's own target: the request goes without a certificate (never with another
    /// token's) and the server's refusal reaches the app.
    func target(for identity: ClientIdentity?) -> UpstreamTarget {
        guard let identity else { return base }
        if let known = targets.withLock({ $0.first { $0.identity == identity }?.target }) { return known }
        guard let context = try? TLSClientContext(caFile: caFile, identity: identity, insecureSkipVerify: insecureSkipVerify,
                                                  alpn: base.tls?.offeredProtocols ?? []) else {
            return base
        }
        var target = UpstreamTarget(host: base.host, port: base.port, tls: context,
                                    poolKey: base.poolKey + "|x5t:" + identity.thumbprint, allowsLinkLocal: true)
        target.http = base.http
        return targets.withLock { targets in
            if let raced = targets.first(where: { $0.identity == identity }) { return raced.target }
            targets.append((identity, target))
            if targets.count > Self.capacity { targets.removeFirst() }
            return target
        }
    }
}
