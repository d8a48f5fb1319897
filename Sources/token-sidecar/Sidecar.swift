import Admin
import Config
import CredentialEndpoints
import Credentials
import EventLoop
import Glibc
import Logging
import Proxy
import TokenManager

/// The running process: credentials with their token loop, the proxy's worker loops, and a
/// control loop on the main thread for signals (libevent lets one loop own signals) and the
/// admin listener.
final class Sidecar {
    private(set) var config: SidecarConfig
    let logger: Logger
    let control: EventLoop
    let runtime: CredentialRuntime
    let server: ProxyServer
    /// Trace export, when `tracing:` or `OTEL_EXPORTER_OTLP_*` configure an endpoint.
    let tracing: TracingSetup?
    private var watchers: [SignalWatcher] = []
    private var drainTimer: Timer?
    /// Polls, during a drain, for refresh token rotations under way (``stopAfterRotations()``).
    private var rotationPoll: Timer?
    /// Looks every ``trimInterval`` whether enough memory was freed to trim the heap.
    private var trimTimer: Timer?
    /// How often freed buffer memory is looked at.
    static let trimInterval: Duration = .seconds(2)
    /// When the heap is trimmed.
    private var trimPolicy = HeapTrimPolicy()
    private var draining = false
    private let environment: [String: String]
    /// The configuration's version, its reloads and the watch of its file.
    let reloads: ConfigReloads
    /// Called on the control loop once the proxy listens (the admin listener hooks in here).
    var onStarted: ((Sidecar) -> Void)?
    /// The admin listener, when started.
    var admin: (any LoopServer)?
    /// The credential endpoints' listener (`credentialEndpoints:`), when started.
    var credentialEndpoints: CredentialEndpointServer?
    /// Whether a stop signal arrived (health then reports shutting down).
    var isDraining: Bool { draining }

    /// Builds everything from `config`; throws ``StartError`` naming what failed.
    init(config: SidecarConfig, environment: [String: String], logger: Logger, control: EventLoop? = nil) throws {
        self.config = config
        self.reloads = ConfigReloads(file: config.file)
        self.environment = environment
        self.logger = logger
        EventLoop.enableThreads()
        self.control = try control ?? EventLoop()
        tracing = try TracingSetup(config: config.tracing, logger: logger)
        do {
            runtime = try CredentialRuntime(config: config, environment: environment, logger: logger, tracer: tracing?.tracer)
        } catch {
            throw StartError.configuration("\(config.file): \(error)")
        }
        do {
            server = try ProxyServer(config: config, credentials: runtime.credentials, logger: logger)
            server.accessLogWriter = JSONAccessLogWriter(enabled: logger.logLevel <= .info)
            server.tracer = tracing?.tracer
            // Budgets are shared by the fleet through the shared token cache's Redis, if any.
            if let shared = runtime.shared { server.limiters.share(through: shared, on: runtime.tokenLoop) }
        } catch {
            throw StartError.configuration("\(config.file): \(error)")
        }
    }

    /// Starts fetching tokens and serving; returns the proxy's bound address.
    @discardableResult
    func start() throws -> SocketAddress {
        // Signal handlers first: once the address is logged, a supervisor (or a test) may send
        // SIGTERM at once, and it must drain rather than kill the process.
        watchers.append(SignalWatcher(signal: SIGTERM, on: control) { [unowned self] in beginDrain("SIGTERM") })
        watchers.append(SignalWatcher(signal: SIGINT, on: control) { [unowned self] in beginDrain("SIGINT") })
        watchers.append(SignalWatcher(signal: SIGHUP, on: control) { [unowned self] in reload("SIGHUP") })
        try tracing?.start()
        server.auditLog?.start()
        try runtime.start()
        let address = try server.start()
        if let tracing {
            // After the proxy's "listening" line, which supervisors and tests read first.
            logger.info("tracing", metadata: ["endpoint": .string(tracing.exporter.settings.endpoint.description),
                                              "sampler": .string(tracing.config.sampler.rawValue)])
        }
        trimTimer = Timer(on: control, after: Self.trimInterval, repeating: Self.trimInterval) { [unowned self] in trimHeap() }
        reloads.watch(on: control) { [unowned self] in reload("the file changed") }
        onStarted?(self)
        return address
    }

    /// After slow clients went away (their buffered responses or their sessions freed), freed
    /// heap pages go back to the system: RSS falls back instead of staying at the burst's peak.
    private func trimHeap() {
        if trimPolicy.shouldTrim(released: server.takeReleasedBufferBytes(), free: HeapTrim.freeBytes()) {
            HeapTrim.release()
        }
    }

    /// Runs the control loop until the process has drained (or was stopped).
    func run() {
        control.run()
        admin?.close()
        credentialEndpoints?.close()
        server.stop()
        server.limiters.stopSharing()
        runtime.stop()
        tracing?.stop()
        logger.info("stopped")
    }

    /// SIGTERM/SIGINT: stop accepting, let requests in flight finish for up to drainTimeout,
    /// close idle keep-alive connections, then stop. A second signal stops at once.
    func beginDrain(_ reason: String) {
        if draining {
            logger.warning("second stop signal: stopping now", metadata: ["signal": .string(reason)])
            control.stop()
            return
        }
        draining = true
        logger.info("draining", metadata: ["signal": .string(reason), "drainTimeout": "\(config.drainTimeout)"])
        // The drain ends on a worker thread; the rest happens on the control loop.
        let bound = LoopBound(self, on: control)
        server.drain { bound.run { $0.stopAfterRotations() } }
        drainTimer = Timer(on: control, after: config.drainTimeout) { [unowned self] in
            logger.warning("drainTimeout reached with requests still in flight; stopping")
            control.stop()
        }
    }

    /// Stops the control loop once no refresh token is being rotated: a refresh the token
    /// server answered is written to the file and the fleet's shared cache before the process
    /// ends (a rolling restart must not lose the only copy of the new one). The drain timer
    /// still bounds the wait.
    func stopAfterRotations() {
        guard runtime.rotationPending else {
            control.stop()
            return
        }
        logger.info("waiting for a refresh token rotation to be saved before stopping")
        rotationPoll = Timer(on: control, after: .milliseconds(20), repeating: .milliseconds(20)) { [unowned self] in
            // Stopping the loop leaves the timer in place; the loop does not fire it again.
            if !runtime.rotationPending { control.stop() }
        }
    }

    /// SIGHUP, `POST /reload` or a changed file (`reason`): load the file again and apply routes,
    /// credentials and timeouts atomically; a bad file is refused (logged, shown on the status
    /// page and in metrics) and the running configuration stays. Returns whether it applied.
    @discardableResult
    func reload(_ reason: String) -> Bool {
        let digest = reloads.reading()
        let fresh: SidecarConfig
        do {
            fresh = try ConfigLoader.load(path: config.file, environment: environment)
        } catch {
            for problem in error.problems {
                logger.error("reload refused: invalid configuration", metadata: ["problem": .string(problem.description), "trigger": .string(reason)])
            }
            reloads.refused(error.problems.map(\.description).joined(separator: "; "))
            return false
        }
        if fresh.listen != config.listen || fresh.admin != config.admin || fresh.workers != config.workers
            || fresh.credentialEndpoints?.listen != config.credentialEndpoints?.listen
            || (fresh.credentialEndpoints == nil) != (config.credentialEndpoints == nil) {
            logger.warning("reload does not change listen, admin, workers or whether and where credentialEndpoints listen; restart to change them")
        }
        if fresh.sharedCache != config.sharedCache {
            logger.warning("reload does not change sharedCache; restart to change it")
        }
        if fresh.tracing != config.tracing {
            logger.warning("reload does not change tracing; restart to change it")
        }
        if fresh.audit != config.audit {
            logger.warning("reload does not change audit; restart to change it")
        }
        do {
            let credentials = try runtime.reload(fresh)
            try server.reload(config: fresh, credentials: credentials)
        } catch {
            logger.error("reload refused", metadata: ["error": .string("\(error)"), "trigger": .string(reason)])
            reloads.refused("\(config.file): \(error)")
            return false
        }
        config = fresh
        // The endpoints and their credentials' facts as the new file says (realTokens among them).
        CredentialEndpointsWiring.reload(self)
        reloads.applied(digest)
        logger.info("reloaded", metadata: ["routes": "\(fresh.routes.count)", "credentials": "\(fresh.credentials.count)",
                                           "version": .string(reloads.report.version), "trigger": .string(reason)])
        return true
    }
}

/// Why the sidecar could not start.
enum StartError: Error, CustomStringConvertible {
    /// The configuration cannot be used (exit code 2).
    case configuration(String)

    var description: String {
        switch self {
        case .configuration(let message): return message
        }
    }
}
