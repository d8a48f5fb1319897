import ArgumentParser
import Config
import EventLoop
import Foundation
import Glibc
import Logging
import Proxy
import TokenManager

/// `token-sidecar run`: serve until SIGINT or SIGTERM.
struct Run: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Run the proxy.",
        discussion: """
        Logs every address it binds (so `listen: 127.0.0.1:0` is usable), then serves until SIGINT or
        SIGTERM, which stop it cleanly with exit code 0.
        """
    )

    @OptionGroup var options: ConfigOptions

    @Option(help: ArgumentHelp("Override the configuration's logLevel (trace, debug, info, notice, warning, error, critical).", valueName: "LEVEL"))
    var logLevel: String?

    func run() throws {
        let config = try options.load()
        let level = Logger.Level(rawValue: logLevel ?? config.logLevel.rawValue) ?? .info
        LoggingSystem.bootstrap { label in
            var handler = JSONLogHandler(label: label)
            handler.logLevel = level
            return handler
        }
        let logger = Logger(label: "token-sidecar")
        EventLoop.enableThreads()
        let runtime: CredentialRuntime
        do {
            runtime = try CredentialRuntime(config: config, environment: ProcessInfo.processInfo.environment, logger: logger)
        } catch {
            FileHandle.standardError.write(Data("\(config.file): \(error)\n".utf8))
            throw ExitCode(2)
        }
        let server: ProxyServer
        do {
            // Tokens are fetched at start; requests arriving before they are there wait (bounded).
            try runtime.start()
            server = try ProxyServer(config: config, credentials: runtime.credentials, logger: logger)
            try server.start()
        } catch {
            logger.critical("cannot start", metadata: ["error": "\(error)"])
            throw ExitCode(1)
        }
        // Signals belong to one loop only (libevent allows a single signal-owning base): this
        // control loop on the main thread.
        let control = try EventLoop()
        var watchers: [SignalWatcher] = []
        for signal in [SIGINT, SIGTERM] {
            watchers.append(SignalWatcher(signal: signal, on: control) {
                logger.info("stopping", metadata: ["signal": "\(signal)"])
                control.stop()
            })
        }
        control.run()
        server.stop()
        runtime.stop()
        withExtendedLifetime(watchers) {}
        logger.info("stopped")
    }
}
