import ArgumentParser
import Foundation
import Proxy

/// `token-sidecar ca`: print the interception CA certificate apps must trust.
struct CA: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "ca",
        abstract: "Print the HTTPS-interception CA certificate (PEM) that apps must trust.",
        discussion: """
        With intercept.caKeyFile, the operator's CA (checked against its key). Without it, the CA a \
        running sidecar generated and wrote to intercept.caCertFile (a new one at every start). \
        Exits 2 when the configuration has no intercept section or no certificate is available.
        """
    )

    @OptionGroup var options: ConfigOptions

    func run() throws {
        let config = try options.load()
        guard let intercept = config.intercept else {
            FileHandle.standardError.write(Data("\(config.file): intercept: not configured; no route intercepts https\n".utf8))
            throw ExitCode(2)
        }
        do {
            print(try ProxyServer.interceptCertificatePEM(intercept), terminator: "")
        } catch {
            FileHandle.standardError.write(Data("\(config.file): \(error)\n".utf8))
            throw ExitCode(2)
        }
    }
}
