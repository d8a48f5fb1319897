import Config
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
    /// The configuration, for re-reading an operator CA when its files change.
    private let config: InterceptConfig
    /// The current CA's leaves; with an operator CA also the files' bytes it was loaded from and
    /// when they were last compared (at most every ``recheckInterval``, on a CONNECT).
    private let current: Locked<(leaves: LeafCache, files: [UInt8], checkedAt: ContinuousClock.Instant, retiredMints: Int)>
    /// How often an operator CA's files are compared with what was loaded.
    static let recheckInterval: Duration = .seconds(2)
    /// Hosts whose refused handshakes were logged (once each; bounded).
    private let warned = Locked<Set<String>>([])
    /// Handshakes refused per host and reason (the metric), bounded like other host series.
    private let failures = Locked<[InterceptFailureKey: Int]>([:])

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
        let authority: InterceptAuthority
        if let operatorCA = try Self.operatorAuthority(config) {
            authority = operatorCA
        } else {
            do {
                authority = try InterceptAuthority.generate(permittedNames: Self.permittedNames(routes),
                                                            validity: config.caValidity)
                try AtomicFile.write(Array(authority.certificatePEM.utf8), to: config.caCertFile, mode: 0o644)
            } catch {
                throw ProxyStartError(message: "intercept.caCertFile: \(error)")
            }
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
        current = Locked((LeafCache(authority: authority), Self.operatorFiles(config), .now, 0))
        caCertFile = config.caCertFile
    }

    /// Leaf certificates minted since start (by every CA this process used).
    var minted: Int { current.withLock { $0.retiredMints + $0.leaves.minted } }

    /// The operator CA's certificate and key files, concatenated (empty for a generated CA).
    private static func operatorFiles(_ config: InterceptConfig) -> [UInt8] {
        guard let keyFile = config.caKeyFile else { return [] }
        return (AtomicFile.read(config.caCertFile) ?? []) + (AtomicFile.read(keyFile) ?? [])
    }

    /// Re-reads an operator CA whose files changed (a renewal by cert-manager, a rotated
    /// Secret): new leaves come from the new CA; a pair that does not load keeps the old one.
    private func reloadIfChanged(logger: Logger) {
        guard config.caKeyFile != nil else { return }
        let now = ContinuousClock.now
        let due = current.withLock { state -> Bool in
            guard now - state.checkedAt >= Self.recheckInterval else { return false }
            state.checkedAt = now
            return true
        }
        guard due else { return }
        let files = Self.operatorFiles(config)
        guard files != current.withLock({ $0.files }) else { return }
        do {
            guard let authority = try Self.operatorAuthority(config) else { return }
            current.withLock { $0 = (LeafCache(authority: authority), files, now, $0.retiredMints + $0.leaves.minted) }
            logger.info("interception CA re-read", metadata: ["ca": .string(authority.fingerprint)])
        } catch {
            current.withLock { $0.files = files }  // logged once per change, not per CONNECT
            logger.error("interception CA files changed but cannot be used; keeping the previous CA",
                         metadata: ["error": "\(error)"])
        }
    }

    /// The operator's CA (`caKeyFile` with `caCertFile`), checked to be a CA whose key matches;
    /// nil when the configuration generates one.
    static func operatorAuthority(_ config: InterceptConfig) throws(ProxyStartError) -> InterceptAuthority? {
        guard let keyFile = config.caKeyFile else { return nil }
        guard let certificate = AtomicFile.read(config.caCertFile) else {
            throw ProxyStartError(message: "intercept.caCertFile: cannot read \(config.caCertFile)")
        }
        guard let key = AtomicFile.read(keyFile) else {
            throw ProxyStartError(message: "intercept.caKeyFile: cannot read \(keyFile)")
        }
        do {
            return try InterceptAuthority(certificatePEM: certificate, keyPEM: key)
        } catch {
            throw ProxyStartError(message: "intercept.caKeyFile: \(error)")
        }
    }

    /// The TLS server context presenting a leaf for `host` (minted on first use).
    func serverContext(for host: String, logger: Logger) throws -> TLSServerContext {
        reloadIfChanged(logger: logger)
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
