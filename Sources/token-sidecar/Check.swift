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

    func run() throws {
        let config = try options.load()
        do {
            // Builds every credential (reads secrets and TLS files) without fetching anything.
            _ = try CredentialRuntime(config: config, environment: ProcessInfo.processInfo.environment,
                                      logger: Logger(label: "token-sidecar"))
            try ProxyServer.checkSpool(config.spool)
        } catch {
            FileHandle.standardError.write(Data("\(config.file): \(error)\n".utf8))
            throw ExitCode(2)
        }
        print(config.renderEffective(), terminator: "")
    }
}
