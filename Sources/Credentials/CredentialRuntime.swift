import Config
import EventLoop
import Logging
import TokenManager
import Tracing

/// The credentials of a configuration together with the token loop their fetches run on
/// (its own thread): build, start fetching, reload, stop.
public final class CredentialRuntime: @unchecked Sendable {
    // @unchecked: mutable state (`current`, `configs`, `retired`, `started`) is touched only on
    // the thread that owns the runtime (start/reload/stop); the token loop gets its own copies.
    /// The credentials, by name.
    public private(set) var credentials: CredentialSet
    private var configs: [String: CredentialConfig]
    /// The routes with per-request tokens, as configured when their variants were built.
    private var variantRoutes: [String: (route: RouteConfig, credential: CredentialConfig)] = [:]
    private let cacheSize: Int
    private let environment: [String: String]
    private let logger: Logger
    private let cache: TokenCache
    /// The fleet's shared token cache (`sharedCache:`), nil without one. A reload keeps it.
    public let shared: SharedTokenCache?
    private let thread: LoopThread
    /// The token loop: credentials fetch, and the shared cache's store runs, on it.
    public var tokenLoop: EventLoop { thread.loop }
    /// Re-reads static token files; created and touched only on the token loop.
    private var fileWatch: Timer?
    private var started = false
    /// Where fetch spans go (nil: tracing off).
    private let tracer: Tracer?

    /// How often static `tokenFile`s are checked for rotation.
    static let fileCheckInterval: Duration = .seconds(2)

    /// Reads secrets and builds every credential; throws naming what could not be read.
    /// `writesFiles: false` (`check`): a `placeholderFile` that does not exist is not written.
    public init(config: SidecarConfig, environment: [String: String], logger: Logger, tracer: Tracer? = nil,
                writesFiles: Bool = true) throws {
        thread = try LoopThread { _ in }
        self.tracer = tracer
        self.environment = environment
        self.logger = logger
        cache = TokenCache(capacity: config.cacheSize)
        cacheSize = config.cacheSize
        let tokenLoop = thread.loop
        let shared = try config.sharedCache.map { try SharedCacheFactory.make($0, loop: tokenLoop) }
        self.shared = shared
        var built: [any Credential] = []
        var configs: [String: CredentialConfig] = [:]
        for credential in config.credentials {
            built.append(try CredentialFactory.make(credential, environment: environment, tokenLoop: thread.loop,
                                                    cache: cache, logger: logger, shared: shared, tracer: tracer))
            configs[credential.name] = credential
        }
        self.configs = configs
        credentials = CredentialSet(built)
        credentials = CredentialSet(built, routeVariants: try buildVariants(config, keeping: [:]).all,
                                    perRequestOnly: Self.perRequestOnly(config),
                                    placeholders: try CredentialFactory.placeholders(of: config, write: writesFiles))
    }

    /// Starts the token loop and the first fetch of every managed credential.
    public func start() throws {
        guard !started else { return }
        started = true
        try thread.start()
        for case let managed as ManagedCredential in credentials.all where !credentials.perRequestOnly.contains(managed.name) {
            managed.start()
        }
        for (_, variants) in credentials.allVariants { variants.start() }
        watchTokenFiles()
    }

    /// The credentials named only by routes that fetch their tokens per request.
    static func perRequestOnly(_ config: SidecarConfig) -> Set<String> {
        var perRequest: Set<String> = []
        var own: Set<String> = []
        for route in config.routes {
            guard let name = route.credential else { continue }
            if route.exchange != nil || route.requested != nil { perRequest.insert(name) } else { own.insert(name) }
        }
        return perRequest.subtracting(own)
    }

    /// The per-request tokens of `config`'s routes: those whose route and credential did not
    /// change are kept (`keeping`, with their tokens), the others made anew.
    private func buildVariants(_ config: SidecarConfig, keeping old: [String: TokenVariants])
        throws -> (all: [String: TokenVariants], fresh: [TokenVariants]) {
        var all: [String: TokenVariants] = [:]
        var fresh: [TokenVariants] = []
        var routes: [String: (route: RouteConfig, credential: CredentialConfig)] = [:]
        let byName = Dictionary(config.credentials.map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
        for route in config.routes {
            guard let name = route.credential, let credential = byName[name] else { continue }
            let key = route.host.description
            if let previous = variantRoutes[key], previous.route == route, previous.credential == credential, let kept = old[key] {
                all[key] = kept
            } else if let made = try RouteVariantsFactory.make(route: route, credential: credential, capacity: config.cacheSize,
                                                               environment: environment, tokenLoop: thread.loop, logger: logger,
                                                               tracer: tracer) {
                all[key] = made
                fresh.append(made)
            } else {
                continue
            }
            routes[key] = (route, credential)
        }
        variantRoutes = routes
        return (all, fresh)
    }

    /// Builds the credentials of a reloaded configuration: unchanged ones are kept as they are
    /// (with their tokens), new or changed ones are created and start fetching. Credentials that
    /// are no longer used stop fetching. Throws (changing nothing) when a secret cannot be read.
    public func reload(_ config: SidecarConfig) throws -> CredentialSet {
        var built: [any Credential] = []
        var configs: [String: CredentialConfig] = [:]
        for credential in config.credentials {
            if self.configs[credential.name] == credential, let existing = credentials[credential.name] {
                built.append(existing)
            } else {
                let made = try CredentialFactory.make(credential, environment: environment, tokenLoop: thread.loop,
                                                      cache: cache, logger: logger, shared: shared, tracer: tracer)
                built.append(made)
            }
            configs[credential.name] = credential
        }
        let kept = Set(built.map { ObjectIdentifier($0) })
        let retired = credentials.all.filter { !kept.contains(ObjectIdentifier($0)) }
        let previousVariants = credentials.routeVariants
        let previousRoutes = variantRoutes
        let variants: (all: [String: TokenVariants], fresh: [TokenVariants])
        do {
            variants = try buildVariants(config, keeping: previousVariants)
        } catch {
            variantRoutes = previousRoutes
            throw error
        }
        let keptVariants = Set(variants.all.values.map { ObjectIdentifier($0) })
        let retiredVariants = previousVariants.values.filter { !keptVariants.contains(ObjectIdentifier($0)) }
        self.configs = configs
        credentials = CredentialSet(built, routeVariants: variants.all, perRequestOnly: Self.perRequestOnly(config),
                                    placeholders: try CredentialFactory.placeholders(of: config))
        // Every credential whose own token some route now injects (a kept one may have been used
        // only per request before, so never started); start is idempotent.
        for case let managed as ManagedCredential in credentials.all where !credentials.perRequestOnly.contains(managed.name) {
            managed.start()
        }
        for made in variants.fresh { made.start() }
        // Requests in flight may still wait on a retired credential's token: give them time.
        let grace = config.drainTimeout
        let loop = thread.loop
        let box = RetiredCredentials(retired, variants: retiredVariants)
        loop.execute { box.stop(after: grace, on: loop) }
        watchTokenFiles()
        return credentials
    }

    /// Whether a credential's refresh token is being rotated (sent, or answered and not yet
    /// shared with the fleet): stopping now could lose the only copy of the new one.
    public var rotationPending: Bool {
        credentials.all.contains { ($0 as? ManagedCredential)?.rotationPending == true }
    }

    /// Stops fetching and joins the token loop's thread.
    public func stop() {
        guard started else { return }
        started = false
        for case let managed as ManagedCredential in credentials.all { managed.stop() }
        for (_, variants) in credentials.allVariants { variants.stop() }
        thread.loop.execute { [self] in
            fileWatch?.cancel()
            fileWatch = nil
            shared?.store.close()
        }
        thread.stopAndJoin()
    }

    deinit { stop() }

    /// Static credentials from `tokenFile` and AWS keys from files are re-read every couple of
    /// seconds (Kubernetes rotates mounted secrets by swapping a symlink); a changed token or
    /// key replaces the old one.
    private func watchTokenFiles() {
        var watched: [(StaticCredential, @Sendable () throws -> String)] = []
        let environment = self.environment
        for credential in credentials.all {
            guard let staticCredential = credential as? StaticCredential else { continue }
            switch configs[credential.name]?.kind {
            case .staticToken(let settings)?:
                guard case .file = settings.source else { continue }
                watched.append((staticCredential, { try settings.source.read(environment: environment) }))
            case .aws(let aws)?:
                guard case .files(let id, let secret, let session) = aws.source else { continue }
                let files = AWSKeyFiles(accessKeyIdFile: id, secretAccessKeyFile: secret, sessionTokenFile: session)
                watched.append((staticCredential, { try files.read().tokenValue }))
            default:
                continue
            }
        }
        let logger = self.logger
        let box = WatchBox(watched)
        let loop = thread.loop
        loop.execute { [self] in
            fileWatch?.cancel()
            fileWatch = nil
            guard !box.entries.isEmpty else { return }
            let timer = Timer(on: loop, after: Self.fileCheckInterval, repeating: Self.fileCheckInterval) {
                for (credential, read) in box.entries {
                    do {
                        credential.replace(token: try read())
                    } catch {
                        logger.error("cannot re-read a token or key file; keeping the previous one",
                                     metadata: ["credential": .string(credential.name)])
                    }
                }
            }
            fileWatch = timer
        }
    }
}

/// Carries loop-owned values into the token loop (created and used only there).
private final class WatchBox: @unchecked Sendable {
    let entries: [(StaticCredential, @Sendable () throws -> String)]
    init(_ entries: [(StaticCredential, @Sendable () throws -> String)]) { self.entries = entries }
}

/// Credentials removed by a reload, stopped after a grace period.
private final class RetiredCredentials: @unchecked Sendable {
    let credentials: [any Credential]
    let variants: [TokenVariants]
    private var timer: Timer?
    init(_ credentials: [any Credential], variants: [TokenVariants]) {
        self.credentials = credentials
        self.variants = variants
    }

    func stop(after grace: Duration, on loop: EventLoop) {
        timer = Timer(on: loop, after: grace) { [self] in
            for case let managed as ManagedCredential in credentials { managed.stop() }
            for retired in variants { retired.stop() }
            timer = nil
        }
    }
}
