import ArgumentParser
import EventLoop
import Foundation

/// `token-sidecar health`: asks a running sidecar's admin listener whether it is healthy (for a
/// container HEALTHCHECK: the image has no curl).
struct Health: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Check a running sidecar: GET /healthz on its admin address (exit 0 when healthy).",
        discussion: "Use --ready to check /readyz instead (every credential has a valid token)."
    )

    @Option(help: ArgumentHelp("The admin address of the running sidecar.", valueName: "HOST:PORT"))
    var admin: String = "127.0.0.1:9901"

    @Flag(help: "Check /readyz instead of /healthz.")
    var ready = false

    @Option(help: ArgumentHelp("Give up after this many seconds.", valueName: "SECONDS"))
    var timeout: Int = 3

    func run() throws {
        guard let colon = admin.lastIndex(of: ":"), let port = Int(admin[admin.index(after: colon)...]) else {
            FileHandle.standardError.write(Data("token-sidecar health: --admin must be HOST:PORT\n".utf8))
            throw ExitCode(2)
        }
        let host = String(admin[..<colon]).trimmingCharacters(in: CharacterSet(charactersIn: "[]"))
        let path = ready ? "/readyz" : "/healthz"
        let loop = try EventLoop()
        let probe = HealthProbe(loop: loop)
        guard let connection = Connection.connect(host: host, port: port, on: loop, delegate: probe) else { throw ExitCode(1) }
        connection.write(Array("GET \(path) HTTP/1.1\r\nHost: \(admin)\r\nConnection: close\r\n\r\n".utf8))
        connection.startReading()
        let guardTimer = Timer(on: loop, after: .seconds(timeout)) { loop.stop() }
        loop.run()
        guardTimer.cancel()
        connection.close()
        guard let status = probe.status else {
            FileHandle.standardError.write(Data("token-sidecar health: no answer from \(admin)\(path)\n".utf8))
            throw ExitCode(1)
        }
        print("\(path): \(status)")
        if status != 200 { throw ExitCode(1) }
    }
}

/// Reads the status line of the admin's answer.
private final class HealthProbe: ConnectionDelegate {
    let loop: EventLoop
    var status: Int?
    init(loop: EventLoop) { self.loop = loop }

    func connectionDidRead(_ connection: any ByteStream) {
        let text = String(decoding: connection.input.peekBytes(max: 64), as: UTF8.self)
        guard let end = text.range(of: "\r\n") else { return }
        let parts = text[..<end.lowerBound].split(separator: " ")
        status = parts.count >= 2 ? Int(parts[1]) : nil
        loop.stop()
    }

    func connection(_ connection: any ByteStream, didEnd reason: ConnectionEnd) { loop.stop() }
}
