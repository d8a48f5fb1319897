import ArgumentParser
import Config
import EventLoop
import Foundation
import Logging
import Proxy

/// `token-sidecar run`: serve until SIGINT or SIGTERM.
struct Run: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Run the proxy.",
        discussion: """
        Logs every address it binds (so `listen: 127.0.0.1:0` is usable), fetches every credential's \
        token, then serves. SIGTERM/SIGINT drain (stop accepting, finish requests in flight for up to \
        drainTimeout) and exit 0; SIGHUP reloads the configuration file.
        """
    )

    @OptionGroup var options: ConfigOptions

    @Option(help: ArgumentHelp("Override the configuration's logLevel (trace, debug, info, notice, warning, error, critical).", valueName: "LEVEL"))
    var logLevel: String?

    func run() throws {
        // Before anything else: it may start the process again.
        ProcessSetup.tuneAllocator()
        // First: OpenSSL takes a custom allocator only before its first allocation (a key or
        // certificate the configuration loads would be one).
        EventLoop.enableThreads()
        let config = try options.load()
        let logger = bootstrapLogging(level: logLevel ?? config.logLevel.rawValue)
        // From here on a loop that logs never waits for stderr's reader.
        LogWriter.shared.startBackgroundWriting()
        // Before the listeners exist: the derived maxClientConnections reads the raised limit.
        ProcessSetup.prepare(logger: logger)
        let sidecar: Sidecar
        do {
            sidecar = try Sidecar(config: config, environment: ProcessInfo.processInfo.environment, logger: logger)
        } catch {
            FileHandle.standardError.write(Data("\(error)\n".utf8))
            throw ExitCode(2)
        }
        sidecar.onStarted = {
            AdminWiring.start(for: $0)
            CredentialEndpointsWiring.start(for: $0)
        }
        do {
            try sidecar.start()
        } catch {
            logger.critical("cannot start", metadata: ["error": "\(error)"])
            throw ExitCode(1)
        }
        // Once start-up has settled (workers set up their listeners and logged on their own
        // threads), the pages only start-up touched need not stay resident.
        let release = LoopTimer(on: sidecar.control, after: StartupPages.settleDelay) { StartupPages.release() }
        sidecar.run()
        withExtendedLifetime(release) {}
    }
}

/// Installs the JSON/terminal handler at `level` and returns the process logger.
func bootstrapLogging(level: String) -> Logger {
    let level = Logger.Level(rawValue: level) ?? .info
    LoggingSystem.bootstrap { label in
        var handler = JSONLogHandler(label: label)
        handler.logLevel = level
        return handler
    }
    return Logger(label: "token-sidecar")
}
