import Foundation
import Glibc
import XCTest

/// A real `redis-server` for one test: loopback, a free port, no persistence. Killed on deinit.
/// Shared by the Redis client's tests and the fleet tests (one launcher, in test support).
public final class RedisServerProcess {
    /// The running server.
    public private(set) var process = Process()
    /// Its loopback port.
    public let port: Int
    private let password: String?

    /// Starts redis-server (skips the test when it is not installed) and waits until it answers.
    public init(password: String? = nil, port: Int? = nil) throws {
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/redis-server") else {
            throw XCTSkip("redis-server is not installed (Debian package redis-server; make deps)")
        }
        self.port = port ?? RedisServerProcess.freePort()
        self.password = password
        try start()
    }

    deinit { kill() }

    /// (Re)starts the server on the same port.
    public func start() throws {
        process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/redis-server")
        process.arguments = ["--port", String(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"]
            + (password.map { ["--requirepass", $0] } ?? [])
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        let deadline = Date().addingTimeInterval(10)
        while Date() < deadline {
            if (try? command(["PING"])) != nil { return }
            Thread.sleep(forTimeInterval: 0.05)
        }
        throw CocoaError(.fileReadUnknown, userInfo: [NSLocalizedDescriptionKey: "redis-server did not answer on \(port)"])
    }

    /// SIGKILL, waiting for the exit.
    public func kill() {
        killAndReap(process)
    }

    /// Runs `redis-cli` with `arguments`; its standard output.
    @discardableResult
    public func command(_ arguments: [String]) throws -> String {
        let cli = Process()
        cli.executableURL = URL(fileURLWithPath: "/usr/bin/redis-cli")
        cli.arguments = ["-h", "127.0.0.1", "-p", String(port)] + (password.map { ["-a", $0, "--no-auth-warning"] } ?? []) + arguments
        let out = Pipe()
        cli.standardOutput = out
        cli.standardError = FileHandle.nullDevice
        try cli.run()
        let data = out.fileHandleForReading.readDataToEndOfFile()
        cli.waitUntilExit()
        guard cli.terminationStatus == 0 else { throw CocoaError(.fileReadUnknown) }
        let text = String(decoding: data, as: UTF8.self)
        if text.hasPrefix("Could not connect") { throw CocoaError(.fileReadUnknown) }
        return text
    }

    /// Every key (SCAN) with its value as redis-cli prints it (binary escaped).
    public func dump() throws -> [(key: String, value: String)] {
        let keys = try command(["--scan"]).split(separator: "\n").map(String.init)
        return try keys.map { ($0, try command(["--no-raw", "GET", $0])) }
    }

    /// A loopback port nothing listens on right now.
    public static func freePort() -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        _ = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        return Int(UInt16(bigEndian: address.sin_port))
    }
}
