import ArgumentParser
import Config
import Foundation
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
            _ = try CredentialFactory.make(from: config, environment: ProcessInfo.processInfo.environment)
        } catch {
            FileHandle.standardError.write(Data("\(config.file): \(error)\n".utf8))
            throw ExitCode(2)
        }
        print(config.renderEffective(), terminator: "")
    }
}
