import Tracing
import Config
import Crypto
import EventLoop
import Logging
import TokenManager

/// The forward proxy: one listener, connection set and upstream pool per worker loop, each on
/// its own thread, all listening on the same port with `SO_REUSEPORT`.
public final class ProxyServer: @unchecked Sendable {
    // @unchecked: `threads` and `addresses` are written only by start()/stop() on the owning
    // thread; workers share nothing mutable.
    private let config: SidecarConfig
    private let router: Router
    private let logger: Logger
    private var threads: [LoopThread] = []
    private var contexts: [WorkerContextBox] = []
    /// The disk space every worker's response spools share.
    private let spoolBudget: SpoolBudget
    /// The memory every worker's sessions share for output queued beyond a small share each.
    private let bufferBudget = BufferBudget()
    /// HTTPS interception, when configured (shared by every worker).
    private let interception: Interception?
    /// The address the proxy listens on (with the real port when the config asked for port 0).
    public private(set) var address: SocketAddress?
    /// Where access records go (set before ``start()``); `nil`: through the logger.
    public var accessLogWriter: (any AccessLogWriter)?
    /// Records a span per request and per upstream attempt (set before ``start()``); nil: off.
    public var tracer: Tracer?
    /// Every route's and credential's limits (`limits:`), kept across reloads.
    public let limiters = LimiterRegistry()
    /// Where audit records go (`audit:`, opened by ``init(config:credentials:logger:)``); nil:
    /// none are written.
    public let auditLog: AuditLog?

    /// Prepares a proxy for `config`, injecting tokens from `credentials`.
    /// Throws when a route's TLS files (CA bundle, client certificate or key) cannot be used, or
    /// when spooling is on and no file can be created in `spool.directory`.
    public init(config: SidecarConfig, credentials: CredentialSet, logger: Logger) throws {
        self.config = config
        self.router = try Router(config: config, credentials: credentials, limiters: limiters)
        self.logger = logger
        spoolBudget = SpoolBudget(directory: config.spool.directory, limit: config.spool.maxBytes)
        auditLog = try config.audit.map { config throws(AuditLogError) in try AuditLog(config) }
        interception = try config.intercept.map { try Interception(config: $0, routes: config.routes) }
        if let interception {
            logger.info("intercepting https for routes marked intercept: true",
                        metadata: ["ca": .string(interception.authority.fingerprint), "trust": .string(interception.caCertFile),
                                   "hosts": .string(Interception.permittedNames(config.routes).joined(separator: ","))])
            if !interception.authority.isNameConstrained {
                logger.warning("\(Interception.unconstrainedWarning)", metadata: ["ca": .string(interception.authority.fingerprint)])
            }
        }
        // Found out now rather than when the first slow client arrives.
        try Self.checkSpool(config.spool)
        for route in config.routes where route.upstream?.isTLS == true && route.tls.insecureSkipVerify {
            logger.warning("TLS verification is disabled for a route (insecureSkipVerify)",
                           metadata: ["route": "\(route.host)"])
        }
    }

    /// Checks an operator-provided interception CA (`intercept.caKeyFile`): readable, a CA, its key
    /// matching. Nothing to check (and nothing written) for a generated one. Used by `check`.
    /// Returns the warnings to show (`key: what`): an operator CA without Name Constraints.
    @discardableResult
    public static func checkIntercept(_ config: InterceptConfig) throws(ProxyStartError) -> [String] {
        guard let loaded = try Interception.operatorAuthority(config) else { return [] }
        return loaded.authority.isNameConstrained ? [] : ["intercept.caKeyFile: warning: \(Interception.unconstrainedWarning)"]
    }

    /// The interception CA certificate apps must trust (PEM): the operator's, or the one a running
    /// sidecar generated and wrote to `caCertFile`. Used by `token-sidecar ca`.
    public static func interceptCertificatePEM(_ config: InterceptConfig) throws(ProxyStartError) -> String {
        if let loaded = try Interception.operatorAuthority(config) { return loaded.authority.certificatePEM }
        guard let bytes = AtomicFile.read(config.caCertFile), (try? X509Certificate(pem: bytes)) != nil else {
            throw ProxyStartError(message: "intercept.caCertFile: \(config.caCertFile) holds no certificate yet: a generated CA "
                                      + "exists only while the sidecar runs (it writes this file at every start); "
                                      + "set intercept.caKeyFile for a CA that stays the same")
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// TLS handshakes apps refused or broke off on intercepted tunnels, by host and reason.
    public func interceptHandshakeFailures() -> [InterceptFailureKey: Int] {
        interception?.failureCounts ?? [:]
    }

    /// Leaf certificates minted for intercepted hosts so far.
    public var interceptLeavesMinted: Int { interception?.minted ?? 0 }

    /// Throws when spooling is on and no spool file can be created in `spool.directory` (used
    /// at start and by `token-sidecar check`).
    public static func checkSpool(_ spool: SpoolConfig) throws(ProxyStartError) {
        guard spool.maxBytes > 0 else { return }
        do {
            _ = try SpoolFile(directory: spool.directory)
        } catch {
            throw ProxyStartError(message: "spool.directory: cannot \(error); point spool.directory at a writable "
                                      + "directory, or set spool.maxBytes: 0 to turn spooling off")
        }
    }

    /// Binds the listeners and starts the worker threads. Returns the bound address.
    @discardableResult
    public func start() throws -> SocketAddress {
        var bindAddress = try SocketAddress(host: config.listen.host, port: config.listen.port)
        let clients = Self.clientLimit(config)
        for index in 0..<max(1, config.workers) {
            let thread = try LoopThread { _ in }
            let context = WorkerContext(loop: thread.loop, router: router, config: config, clientShare: clients.share,
                                        logger: logger.with(worker: index), worker: index, accessLogWriter: accessLogWriter,
                                        spoolBudget: spoolBudget, bufferBudget: bufferBudget)
            context.interception = interception
            context.tracer = tracer
            context.auditLog = auditLog
            // The listener is created before its loop runs, then used only on that loop's thread.
            let listener = try Listener(address: bindAddress, on: thread.loop,
                                        onAcceptError: { context.acceptFailed($0) }) { connection in
                context.adopt(connection)
            }
            context.listener = listener
            if index == 0 {
                // Every other worker binds the port the first one got (matters for port 0).
                bindAddress = listener.address
                address = listener.address
            }
            contexts.append(WorkerContextBox(context: context, listener: listener))
            threads.append(thread)
        }
        for thread in threads { try thread.start() }
        logger.info("listening", metadata: ["address": "\(bindAddress)", "workers": "\(threads.count)",
                                            "descriptorLimit": "\(DescriptorLimit.read().current)",
                                            "maxClientConnections": "\(clients.total)"])
        return bindAddress
    }

    /// `maxClientConnections` (derived from the descriptor limit in force when not configured)
    /// and each worker's share of it.
    static func clientLimit(_ config: SidecarConfig) -> (total: Int, share: Int) {
        let total = config.maxClientConnections
            ?? ClientConnectionLimit.derived(descriptorLimit: DescriptorLimit.read().current)
        return (total, ClientConnectionLimit.share(of: total, workers: max(1, config.workers)))
    }

    /// Merges every worker's counters (each copied on its own loop); `completion` runs on
    /// whichever worker thread finishes last.
    public func collectMetrics(_ completion: @escaping @Sendable (ProxyMetrics) -> Void) {
        let boxes = contexts
        let budget = spoolBudget
        let buffers = bufferBudget
        let interception = interception
        let pending = Locked((remaining: boxes.count, total: ProxyMetrics()))
        if boxes.isEmpty { completion(ProxyMetrics()); return }
        for box in boxes {
            box.context.loop.execute {
                let snapshot = box.context.metricsSnapshot()
                let finished: ProxyMetrics? = pending.withLock { state in
                    state.total.merge(snapshot)
                    state.remaining -= 1
                    return state.remaining == 0 ? state.total : nil
                }
                if var finished {
                    // Process-wide, so filled in once rather than merged.
                    finished.spoolBytes = budget.inUse
                    finished.bufferedBytes = buffers.inUse
                    finished.interceptHandshakeFailures = interception?.failureCounts ?? [:]
                    finished.interceptCertificatesMinted = interception?.minted ?? 0
                    completion(finished)
                }
            }
        }
    }

    /// Bytes of client output given back since the last call (see
    /// ``BufferBudget/takeReleased()``): the caller returns freed memory to the system after a lot.
    public func takeReleasedBufferBytes() -> Int {
        bufferBudget.takeReleased()
    }

    /// Graceful shutdown, part one: stop accepting, close idle keep-alive connections, let
    /// requests in flight finish. `completion` runs (on a worker thread) once every worker has no
    /// connection left; the caller bounds the wait (`drainTimeout`) and then calls ``stop()``.
    public func drain(_ completion: @escaping @Sendable () -> Void) {
        let boxes = contexts
        let remaining = Locked(boxes.count)
        if boxes.isEmpty { completion(); return }
        for box in boxes {
            box.context.loop.execute {
                box.listener.close()
                box.context.beginDrain {
                    if remaining.withLock({ $0 -= 1; return $0 == 0 }) { completion() }
                }
            }
        }
    }

    /// Applies a reloaded configuration: new routes, credentials and timeouts on every worker.
    /// Requests in flight finish with what they started with. Throws (changing nothing) when a
    /// route's TLS files cannot be used. The listen address is not changed by a reload.
    public func reload(config newConfig: SidecarConfig, credentials: CredentialSet) throws {
        let newRouter = try Router(config: newConfig, credentials: credentials, limiters: limiters)
        if newConfig.spool != config.spool {
            logger.warning("spool settings changed; they take effect when the process restarts")
        }
        if newConfig.intercept != config.intercept
            || Interception.permittedNames(newConfig.routes) != Interception.permittedNames(config.routes) {
            // The CA (and a generated CA's name constraints) is made at start: a host added to
            // interception now would get leaves apps cannot verify until the process restarts.
            logger.warning("intercept settings or intercepting routes changed; the CA is kept until the process restarts")
        }
        // Shares stay based on the worker count the process started with (reload keeps it).
        let share = ClientConnectionLimit.share(of: Self.clientLimit(newConfig).total, workers: contexts.count)
        for box in contexts {
            box.context.loop.execute { box.context.apply(router: newRouter, config: newConfig, clientShare: share) }
        }
        limiters.keep(only: Router.limitScopes(newConfig))
    }

    /// Stops every worker: closes listeners and connections, then joins the threads.
    public func stop() {
        for (thread, box) in zip(threads, contexts) {
            thread.loop.execute {
                box.listener.close()
                box.context.closeAll()
            }
        }
        for thread in threads { thread.stopAndJoin() }
        threads.removeAll()
        contexts.removeAll()
        // After the workers: their last records are queued.
        auditLog?.flush()
    }
}

/// The proxy cannot start with its configuration (says which key and why).
public struct ProxyStartError: Error, Sendable, CustomStringConvertible {
    /// `key: problem`.
    public let message: String
    /// The message.
    public var description: String { message }
}

/// Carries a worker's loop-confined objects into closures that run on that loop.
private final class WorkerContextBox: @unchecked Sendable {
    // @unchecked: created before the worker starts and used only on the worker's loop after that.
    let context: WorkerContext
    let listener: Listener

    init(context: WorkerContext, listener: Listener) {
        self.context = context
        self.listener = listener
    }
}

extension Logger {
    func with(worker: Int) -> Logger {
        var copy = self
        copy[metadataKey: "worker"] = "\(worker)"
        return copy
    }
}
