import ArgumentParser
import Config
import Credentials
import Foundation
import Logging
import Proxy

/// `token-sidecar check`: validate a configuration and print it with secrets masked.
struct Check: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Validate a configuration file and print the effective settings (secrets masked).",
        discussion: "Exits 0 when the file is valid, 2 with one line per problem (file: key: problem) when it is not."
    )

    @OptionGroup var options: ConfigOptions

    @Flag(help: "Also send PING (after AUTH) to the sharedCache Redis and report the outcome; exits 1 when it does not answer.")
    var ping = false

    func run() throws {
        let config = try options.load()
        var warnings: [String] = []
        do {
            // Builds every credential (reads secrets and TLS files) without fetching anything.
            _ = try CredentialRuntime(config: config, environment: ProcessInfo.processInfo.environment,
                                      logger: Logger(label: "token-sidecar"), writesFiles: false)
            try ProxyServer.checkSpool(config.spool)
            if let intercept = config.intercept { warnings += try ProxyServer.checkIntercept(intercept) }
        } catch {
            FileHandle.standardError.write(Data("\(config.file): \(error)\n".utf8))
            throw ExitCode(2)
        }
        for warning in warnings { FileHandle.standardError.write(Data("\(config.file): \(warning)\n".utf8)) }
        print(config.renderEffective(), terminator: "")
        if ping { try pingSharedCache(config) }
    }

    /// `--ping`: one line on standard error, exit 1 when Redis does not answer.
    private func pingSharedCache(_ config: SidecarConfig) throws {
        guard let shared = config.sharedCache else {
            FileHandle.standardError.write(Data("\(config.file): sharedCache: not configured; nothing to ping\n".utf8))
            throw ExitCode(2)
        }
        switch try RedisPing.ping(shared) {
        case .success(let elapsed):
            let milliseconds = Double(elapsed.components.attoseconds) / 1e15 + Double(elapsed.components.seconds) * 1000
            FileHandle.standardError.write(Data("sharedCache \(shared.url): PONG in \(String(format: "%.1f", milliseconds)) ms\n".utf8))
        case .failure(let error):
            FileHandle.standardError.write(Data("sharedCache \(shared.url): no answer: \(error)\n".utf8))
            throw ExitCode(1)
        }
    }
}
