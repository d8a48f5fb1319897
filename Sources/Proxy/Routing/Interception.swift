import Config
import Crypto
import EventLoop
import HTTP1
import Logging

/// HTTPS interception's process-wide state: the CA, the leaf certificates it mints (one bounded
/// LRU shared by every worker, so a host costs one signature per process), and which hosts
/// already logged a client that refused them. Immutable apart from the lock-protected parts.
final class Interception: Sendable {
    /// The CA leaves are signed with now (its key never leaves memory).
    var authority: InterceptAuthority { current.withLock { $0.leaves.authority } }
    /// Leaf certificates by host, from the current CA.
    var leaves: LeafCache { current.withLock { $0.leaves } }
    /// The file apps are told to trust.
    let caCertFile: String
    /// The configuration, for re-reading an operator CA and renewing a generated one.
    private let config: InterceptConfig
    /// The names a generated CA is constrained to.
    private let permitted: [String]
    /// The current CA's leaves; with an operator CA also a digest of the files it was loaded
    /// from; when its files or expiry were last looked at (at most every ``recheckInterval``, on
    /// a CONNECT); leaves minted by CAs used before.
    private let current: Locked<CAState>
    /// How often an operator CA's files (and any CA's expiry) are looked at.
    static let recheckInterval: Duration = .seconds(2)
    /// Hosts whose refused handshakes were logged (once each; bounded).
    private let warned = Locked<Set<String>>([])
    /// Handshakes refused per host and reason (the metric), bounded like other host series.
    private let failures = Locked<[InterceptFailureKey: Int]>([:])

    private struct CAState {
        var leaves: LeafCache
        var filesDigest: [UInt8]
        var checkedAt: ContinuousClock.Instant
        var retiredMints: Int
        /// The expiry warning was logged for this CA.
        var warnedExpiry = false
    }

    /// What `check` and the start-up log say once about an operator CA without Name Constraints.
    static let unconstrainedWarning = "the interception CA has no X.509 Name Constraints: it can vouch for any host name "
        + "or IP address, not only the intercepting routes; constrain it to them (README: Security model)"

    /// The names a generated CA is constrained to: each intercepting route's host.
    static func permittedNames(_ routes: [RouteConfig]) -> [String] {
        routes.filter(\.intercept).map { route in
            switch route.host.kind {
            case .exact(let name): return name
            case .suffix(let suffix): return "*" + suffix
            }
        }
    }

    /// Loads the operator's CA, or generates one constrained to the intercepting routes' names,
    /// and writes its certificate (and the bundle) where the configuration says.
    init(config: InterceptConfig, routes: [RouteConfig]) throws {
        self.config = config
        permitted = Self.permittedNames(routes)
        let authority: InterceptAuthority
        var digest: [UInt8] = []
        if let loaded = try Self.operatorAuthority(config) {
            authority = loaded.authority
            digest = loaded.digest
        } else {
            authority = try Self.generate(config, permitted)
        }
        current = Locked(CAState(leaves: LeafCache(authority: authority), filesDigest: digest, checkedAt: .now, retiredMints: 0))
        caCertFile = config.caCertFile
    }

    /// A new CA for `names`, its certificate (and the bundle) written for apps.
    private static func generate(_ config: InterceptConfig, _ names: [String]) throws(ProxyStartError) -> InterceptAuthority {
        let authority: InterceptAuthority
        do {
            authority = try InterceptAuthority.generate(permittedNames: names, validity: config.caValidity)
            try AtomicFile.write(Array(authority.certificatePEM.utf8), to: config.caCertFile, mode: 0o644)
        } catch {
            throw ProxyStartError(message: "intercept.caCertFile: \(error)")
        }
        if let bundleFile = config.bundleFile {
            var bundle = AtomicFile.systemTrustBundle() ?? []
            if let last = bundle.last, last != 0x0A { bundle.append(0x0A) }
            bundle += Array(authority.certificatePEM.utf8)
            do {
                try AtomicFile.write(bundle, to: bundleFile, mode: 0o644)
            } catch {
                throw ProxyStartError(message: "intercept.bundleFile: \(error)")
            }
        }
        return authority
    }

    /// Leaf certificates minted since start (by every CA this process used).
    var minted: Int { current.withLock { $0.retiredMints + $0.leaves.minted } }

    /// Looks after the CA at most every ``recheckInterval``: re-reads an operator CA whose files
    /// changed (a renewal by cert-manager, a rotated Secret; a pair that does not load keeps the
    /// old CA), warns once when a CA has a third of its life left, and replaces a generated CA
    /// that is about to expire (its file rewritten: apps that read it only at start must restart).
    private func maintain(logger: Logger) {
        let now = ContinuousClock.now
        let due = current.withLock { state -> Bool in
            guard now - state.checkedAt >= Self.recheckInterval else { return false }
            state.checkedAt = now
            return true
        }
        guard due else { return }
        if config.caKeyFile != nil {
            rereadOperatorCA(logger: logger)
        }
        let authority = self.authority
        let left = authority.secondsLeft
        let lifetime = Int(config.caValidity.components.seconds)
        if config.caKeyFile == nil && left < 3600 {
            do {
                let renewed = try Self.generate(config, permitted)
                current.withLock { $0 = CAState(leaves: LeafCache(authority: renewed), filesDigest: [], checkedAt: now,
                                                 retiredMints: $0.retiredMints + $0.leaves.minted) }
                logger.warning("the generated interception CA expired and was replaced; apps must trust the new one",
                               metadata: ["ca": .string(renewed.fingerprint), "trust": .string(caCertFile)])
            } catch {
                logger.error("cannot replace the expiring interception CA", metadata: ["error": "\(error)"])
            }
            return
        }
        let warn = current.withLock { state -> Bool in
            guard !state.warnedExpiry, left < max(lifetime, 3 * 3600) / 3 else { return false }
            state.warnedExpiry = true
            return true
        }
        if warn {
            logger.warning("the interception CA expires soon; restart the sidecar and the apps that trust it before then",
                           metadata: ["ca": .string(authority.fingerprint), "secondsLeft": "\(left)"])
        }
    }

    private func rereadOperatorCA(logger: Logger) {
        let digest = Self.operatorFilesDigest(config)
        guard digest != current.withLock({ $0.filesDigest }) else { return }
        do {
            guard let loaded = try Self.operatorAuthority(config) else { return }
            current.withLock {
                $0 = CAState(leaves: LeafCache(authority: loaded.authority), filesDigest: loaded.digest, checkedAt: .now,
                             retiredMints: $0.retiredMints + $0.leaves.minted)
            }
            logger.info("interception CA re-read", metadata: ["ca": .string(loaded.authority.fingerprint)])
            if !loaded.authority.isNameConstrained {
                logger.warning("\(Self.unconstrainedWarning)", metadata: ["ca": .string(loaded.authority.fingerprint)])
            }
        } catch {
            current.withLock { $0.filesDigest = digest }  // logged once per change, not per CONNECT
            logger.error("interception CA files changed but cannot be used; keeping the previous CA",
                         metadata: ["error": "\(error)"])
        }
    }

    /// A digest of the operator CA's certificate and key files (the key's bytes are not kept).
    private static func operatorFilesDigest(_ config: InterceptConfig) -> [UInt8] {
        guard let keyFile = config.caKeyFile else { return [] }
        return Digest.sha256((AtomicFile.read(config.caCertFile) ?? []) + (AtomicFile.read(keyFile) ?? []))
    }

    /// The operator's CA (`caKeyFile` with `caCertFile`), checked to be a CA whose key matches,
    /// with a digest of the bytes it was loaded from (each file read once); nil when the
    /// configuration generates one.
    static func operatorAuthority(_ config: InterceptConfig) throws(ProxyStartError)
        -> (authority: InterceptAuthority, digest: [UInt8])? {
        guard let keyFile = config.caKeyFile else { return nil }
        guard let certificate = AtomicFile.read(config.caCertFile) else {
            throw ProxyStartError(message: "intercept.caCertFile: cannot read \(config.caCertFile)")
        }
        guard let key = AtomicFile.read(keyFile) else {
            throw ProxyStartError(message: "intercept.caKeyFile: cannot read \(keyFile)")
        }
        do {
            return (try InterceptAuthority(certificatePEM: certificate, keyPEM: key), Digest.sha256(certificate + key))
        } catch {
            throw ProxyStartError(message: "intercept.caKeyFile: \(error)")
        }
    }

    /// The TLS server context presenting a leaf for `host` (minted on first use).
    func serverContext(for host: String, logger: Logger) throws -> TLSServerContext {
        maintain(logger: logger)
        return try leaves.context(for: host)
    }

    /// Counts a handshake the app refused or broke off; logs the first per host, naming the file
    /// to trust.
    func handshakeFailed(host: String, end: ConnectionEnd, logger: Logger) {
        let reason = Self.reason(end)
        failures.withLock { counts in
            var key = InterceptFailureKey(host: host, reason: reason)
            if counts[key] == nil && counts.count >= ProxyMetrics.maxUpstreamSeries { key.host = "other" }
            counts[key, default: 0] += 1
        }
        let first = warned.withLock { hosts in
            guard hosts.count < ProxyMetrics.maxUpstreamSeries else { return false }
            return hosts.insert(host).inserted
        }
        if first {
            logger.warning("an app refused the sidecar's certificate for an intercepted host; it must trust the interception CA",
                           metadata: ["host": .string(host), "reason": .string(reason), "trust": .string(caCertFile),
                                      "ca": .string(authority.fingerprint)])
        }
    }

    /// Handshake failures so far, by host and reason.
    var failureCounts: [InterceptFailureKey: Int] { failures.withLock { $0 } }

    /// A short label for a failed handshake (the metric's `reason`).
    static func reason(_ end: ConnectionEnd) -> String {
        switch end {
        case .tlsProtocol(let message), .tlsCertificate(let message):
            let lowered = message.lowercased()
            if lowered.contains("unknown ca") { return "unknown_ca" }
            if lowered.contains("bad certificate") { return "bad_certificate" }
            if lowered.contains("certificate unknown") { return "certificate_unknown" }
            return "tls_error"
        case .endOfStream: return "closed"
        case .timeout: return "timeout"
        default: return "socket_error"
        }
    }
}

/// One series of the handshake-failure metric.
public struct InterceptFailureKey: Hashable, Sendable {
    /// The intercepted host (or `other` past the series limit).
    public var host: String
    /// Why (``Interception/reason(_:)``).
    public var reason: String
}
