import Admin
import ArgumentParser
import Config
import Crypto
import Demo
import EventLoop
import Foundation
import Logging
import Proxy

/// `token-sidecar demo`: the whole job on loopback with no IdP — a demo OAuth issuer, a demo
/// backend that only accepts its tokens, and the proxy between them.
struct Demo: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Run a self-contained demo: a demo OAuth issuer, a protected demo backend and the proxy, all on loopback.",
        discussion: """
        The issuer hands out short-lived client-credentials tokens; the backend rejects requests \
        without a valid one. The proxy fetches and refreshes tokens and injects them into requests \
        for http://demo.local/. The demo sends one request itself and prints what the backend saw, \
        then prints curl commands to try (use --once to exit after the first request).
        """
    )

    @Option(help: ArgumentHelp("Proxy address.", valueName: "HOST:PORT"))
    var listen: String = "127.0.0.1:8080"

    @Option(help: ArgumentHelp("Admin address.", valueName: "HOST:PORT"))
    var admin: String = "127.0.0.1:9901"

    @Option(help: ArgumentHelp("Lifetime of demo tokens in seconds.", valueName: "SECONDS"))
    var tokenLifetime: Int = 30

    @Flag(help: "Exit after the first demo request (for scripts and tests).")
    var once = false

    func run() throws {
        let logger = bootstrapLogging(level: "warning")
        ProcessSetup.routeLibeventDiagnostics(to: logger)
        EventLoop.enableThreads()
        let control = try EventLoop()
        let registry = DemoTokenRegistry()
        let secret = Digest.sha256Hex("\(ProcessInfo.processInfo.processIdentifier)-\(Date().timeIntervalSince1970)").prefix(24)
        let issuer = try DemoIssuer(address: SocketAddress(host: "127.0.0.1", port: 0), loop: control,
                                    clientID: "demo-client", clientSecret: String(secret),
                                    expiresIn: tokenLifetime, registry: registry)
        let backend = try DemoBackend(address: SocketAddress(host: "127.0.0.1", port: 0), loop: control, registry: registry)
        let yaml = """
        listen: "\(listen)"
        admin: "\(admin)"
        accessLog: false
        credentials:
          demo-issuer:
            type: oauth2
            tokenUrl: "http://127.0.0.1:\(issuer.address.port)\(DemoIssuer.tokenPath)"
            clientId: "demo-client"
            secret: "\(secret)"
            refreshAt: 80%
        routes:
          - host: "demo.local"
            upstream: "http://127.0.0.1:\(backend.address.port)"
            credential: demo-issuer
        """
        let config = try ConfigLoader.parse(yaml: yaml, file: "<demo>", environment: [:])
        let sidecar = try Sidecar(config: config, environment: [:], logger: logger, control: control)
        sidecar.onStarted = {
            AdminWiring.start(for: $0)
            CredentialEndpointsWiring.start(for: $0)
        }
        let proxyAddress = try sidecar.start()
        let adminPort = (sidecar.admin?.address.port).map(String.init) ?? "?"
        print("""
        token-sidecar demo
          demo OAuth issuer   http://127.0.0.1:\(issuer.address.port)\(DemoIssuer.tokenPath)  (client demo-client, tokens live \(tokenLifetime)s)
          protected backend   http://127.0.0.1:\(backend.address.port)  (401 without a valid token)
          proxy               http://\(proxyAddress)  routes demo.local -> backend, injecting the issuer's token
          admin               http://127.0.0.1:\(adminPort)/metrics  /tokens  /readyz

        """)
        fflush(nil)
        let probe = DemoRequest(loop: control, port: proxyAddress.port) { result in
            print(result)
            print("""

            Try it yourself:
              # through the proxy: the token is injected, 200
              curl -s -x http://\(proxyAddress) http://demo.local/hello
              # straight to the backend: no token, 401
              curl -s http://127.0.0.1:\(backend.address.port)/hello
              # token state (never the token itself) and metrics
              curl -s http://127.0.0.1:\(adminPort)/tokens
              curl -s http://127.0.0.1:\(adminPort)/metrics
            """)
            fflush(nil)
            if once { sidecar.beginDrain("demo --once") }
        }
        probe.start()
        sidecar.run()
        issuer.close()
        backend.close()
        withExtendedLifetime(probe) {}
    }
}

/// Sends `GET http://demo.local/hello` through the proxy and reports what came back.
private final class DemoRequest: ConnectionDelegate {
    private let loop: EventLoop
    private let port: Int
    private let report: (String) -> Void
    private var connection: (any ByteStream)?
    private var received: [UInt8] = []
    private var done = false

    init(loop: EventLoop, port: Int, report: @escaping (String) -> Void) {
        self.loop = loop
        self.port = port
        self.report = report
    }

    func start() {
        connection = Connection.connect(host: "127.0.0.1", port: port, on: loop, delegate: self)
        connection?.write(Array("GET http://demo.local/hello HTTP/1.1\r\nHost: demo.local\r\nConnection: close\r\n\r\n".utf8))
        connection?.startReading()
    }

    func connectionDidRead(_ connection: any ByteStream) {
        received += connection.input.peekBytes(max: connection.input.count)
        connection.input.drain(connection.input.count)
    }

    func connection(_ connection: any ByteStream, didEnd reason: ConnectionEnd) {
        connection.close()
        guard !done else { return }
        done = true
        let text = String(decoding: received, as: UTF8.self)
        let parts = text.components(separatedBy: "\r\n\r\n")
        let status = parts.first?.components(separatedBy: "\r\n").first ?? "(no response)"
        report("Demo request through the proxy: GET http://demo.local/hello\n  -> \(status)\n  backend saw: \(parts.dropFirst().joined())")
    }
}
