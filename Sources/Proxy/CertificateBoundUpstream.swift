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

    private let host: String
    private let port: Int
    private let poolKey: String
    private let caFile: String?
    private let insecureSkipVerify: Bool
    private let targets = Locked<[(identity: ClientIdentity, target: UpstreamTarget)]>([])

    /// The route's upstream (`host`, `port`), its pool key and how it verifies the server.
    init(host: String, port: Int, poolKey: String, caFile: String?, insecureSkipVerify: Bool) {
        self.host = host
        self.port = port
        self.poolKey = poolKey
        self.caFile = caFile
        self.insecureSkipVerify = insecureSkipVerify
    }

    /// The target presenting `identity`; nil when no TLS context can be made with it (the request
    /// then goes without a certificate and the server's refusal reaches the app).
    func target(for identity: ClientIdentity) -> UpstreamTarget? {
        if let known = targets.withLock({ $0.first { $0.identity == identity }?.target }) { return known }
        guard let context = try? TLSClientContext(caFile: caFile, identity: identity, insecureSkipVerify: insecureSkipVerify) else {
            return nil
        }
        let target = UpstreamTarget(host: host, port: port, tls: context, poolKey: poolKey + "|x5t:" + identity.thumbprint,
                                    allowsLinkLocal: true)
        return targets.withLock { targets in
            if let raced = targets.first(where: { $0.identity == identity }) { return raced.target }
            targets.append((identity, target))
            if targets.count > Self.capacity { targets.removeFirst() }
            return target
        }
    }
}
