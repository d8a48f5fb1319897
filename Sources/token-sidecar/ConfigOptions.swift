import ArgumentParser
import Config
import Foundation

/// `--config FILE`, shared by the subcommands.
struct ConfigOptions: ParsableArguments {
    @Option(name: .shortAndLong, help: ArgumentHelp("The YAML configuration file.", valueName: "FILE"))
    var config: String = "config/token-sidecar.yaml"

    /// Loads and validates the file, or prints one line per problem and exits with code 2.
    func load() throws -> SidecarConfig {
        do {
            return try ConfigLoader.load(path: config, environment: ProcessInfo.processInfo.environment)
        } catch {
            FileHandle.standardError.write(Data((error.description + "\n").utf8))
            throw ExitCode(2)
        }
    }
}
