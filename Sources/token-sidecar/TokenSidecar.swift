import ArgumentParser

/// The `token-sidecar` command line.
@main
struct TokenSidecar: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "token-sidecar",
        abstract: "A forward proxy that injects OAuth 2.0 bearer tokens into your app's HTTP requests.",
        discussion: """
        Point your app at it with HTTP_PROXY=http://127.0.0.1:8080 (or use it as a base URL) and send \
        plain http:// requests. For hosts configured under `routes:`, token-sidecar removes any \
        Authorization the app sent, adds `Authorization: Bearer <token>` from the route's credential and \
        forwards the request to the route's upstream. Other hosts are refused (`otherHosts: deny`) or \
        forwarded untouched (`otherHosts: forward`).

        Examples:
          token-sidecar check --config config/token-sidecar.yaml
          token-sidecar run --config config/token-sidecar.yaml
          curl -x http://127.0.0.1:8080 http://api.test/hello
        """,
        subcommands: [Run.self, Check.self, Token.self, Health.self, CA.self, Demo.self],
        defaultSubcommand: nil
    )
}
