import ArgumentParser
import Config
import Credentials
import EventLoop
import Foundation
import Logging
import TokenManager

/// `token-sidecar token`: fetch one token and print the header value — the seed SDK's
/// `getAuthorizationHeader` as a command.
struct Token: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Fetch a token for a credential and print the Authorization header value (Bearer …).",
        discussion: """
        Prints `Bearer <token>` to stdout, or the token server's error to stderr with exit code 1. \
        Without --credential, the configuration must have exactly one credential. Works with every \
        client-authentication flow: secrets, signed client assertions, assertion files and client \
        certificates.

        Example:
          curl -H "Authorization: $(token-sidecar token --config FILE)" https://api.example.com/
        """
    )

    @OptionGroup var options: ConfigOptions

    @Option(help: ArgumentHelp("The credential to fetch a token for.", valueName: "NAME"))
    var credential: String?

    func run() throws {
        let config = try options.load()
        let environment = ProcessInfo.processInfo.environment
        guard let chosen = pick(config) else { throw ExitCode(2) }
        switch chosen.kind {
        case .staticToken(let settings):
            let token = try readSecret { try settings.source.read(environment: environment) }
            print("Bearer \(token)")
        case .mca(let mca):
            let source = try readSecret { try CredentialFactory.requestSource(for: chosen, environment: environment)! }
            try fetch(source, tls: mca.tls, lifetime: mca.fetch.defaultLifetime, name: chosen.name)
        case .oauth2(let oauth):
            if case .refreshToken = oauth.grant {
                // A refresh here would rotate the refresh token the running sidecars hold.
                FileHandle.standardError.write(Data("\(config.file): credentials.\(chosen.name): grant: refresh_token is not fetched by the token command (a refresh would spend the refresh token the running sidecars hold); read the sidecar's /tokens instead\n".utf8))
                throw ExitCode(2)
            }
            let source = try readSecret { try CredentialFactory.requestSource(for: chosen, environment: environment)! }
            try fetch(source, tls: oauth.tls, lifetime: oauth.fetch.defaultLifetime, name: chosen.name)
        case .aws:
            FileHandle.standardError.write(Data("\(config.file): credentials.\(chosen.name): type: aws has no bearer token; requests through the sidecar are signed with its keys\n".utf8))
            throw ExitCode(2)
        case .googleServiceAccount(let google):
            let source = try readSecret { try CredentialFactory.requestSource(for: chosen, environment: environment)! }
            try fetch(source, tls: google.tls, lifetime: google.fetch.defaultLifetime, name: chosen.name)
        }
    }

    private func pick(_ config: SidecarConfig) -> CredentialConfig? {
        if let credential {
            if let found = config.credential(named: credential) { return found }
            let names = config.credentials.map(\.name).joined(separator: ", ")
            FileHandle.standardError.write(Data("\(config.file): credentials.\(credential): no such credential (configured: \(names))\n".utf8))
            return nil
        }
        guard config.credentials.count == 1 else {
            FileHandle.standardError.write(Data("\(config.file): credentials: \(config.credentials.count) credentials are configured; choose one with --credential NAME\n".utf8))
            return nil
        }
        return config.credentials[0]
    }

    private func readSecret<T>(_ body: () throws -> T) throws -> T {
        do {
            return try body()
        } catch {
            FileHandle.standardError.write(Data("\(options.config): \(error)\n".utf8))
            throw ExitCode(2)
        }
    }

    /// Runs one fetch on a loop on this thread and prints the outcome.
    private func fetch(_ source: TokenRequestSource, tls: TLSSettings, lifetime: Duration, name: String) throws {
        let connector = try readSecret { try CredentialFactory.connector(for: tls, name: name) }
        let loop = try EventLoop()
        let transport = HTTPTokenTransport(loop: loop, connector: connector)
        var outcome: Result<AccessToken, TokenFetchError>?
        TokenFetch.once(source, on: loop, transport: transport, defaultLifetime: lifetime) { result in
            outcome = result
            loop.stop()
        }
        loop.run()
        switch outcome {
        case .success(let token):
            print("Bearer \(token.value)")
        case .failure(let error):
            FileHandle.standardError.write(Data("token-sidecar: credential '\(name)': \(error)\n".utf8))
            throw ExitCode(1)
        case nil:
            throw ExitCode(1)
        }
    }
}
