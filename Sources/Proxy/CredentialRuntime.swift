import Config
import EventLoop
import Logging
import TokenManager

/// The credentials of a configuration together with the token loop their fetches run on
/// (its own thread): build, start fetching, stop.
public final class CredentialRuntime: @unchecked Sendable {
    // @unchecked: `thread` is touched only by start()/stop() on the owning thread.
    /// The credentials, by name.
    public let credentials: CredentialSet
    private let thread: LoopThread
    private var started = false

    /// Reads secrets and builds every credential; throws naming what could not be read.
    public init(config: SidecarConfig, environment: [String: String], logger: Logger) throws {
        thread = try LoopThread { _ in }
        credentials = try CredentialFactory.make(from: config, environment: environment,
                                                 tokenLoop: thread.loop, logger: logger)
    }

    /// Starts the token loop and the first fetch of every managed credential.
    public func start() throws {
        guard !started else { return }
        started = true
        try thread.start()
        for case let managed as ManagedCredential in credentials.all { managed.start() }
    }

    /// Stops fetching and joins the token loop's thread.
    public func stop() {
        guard started else { return }
        started = false
        for case let managed as ManagedCredential in credentials.all { managed.stop() }
        thread.stopAndJoin()
    }

    deinit { stop() }
}
