import Foundation
import Glibc
import XCTest

/// A `redis-server` on a free loopback port without persistence, for one test (killed on deinit).
final class LocalRedis {
    let process = Process()
    let port: Int

    init(port: Int? = nil, arguments: [String] = []) throws {
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/redis-server") else {
            throw XCTSkip("redis-server is not installed (Debian package redis-server; make deps)")
        }
        self.port = port ?? LocalRedis.freePort()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/redis-server")
        process.arguments = ["--port", String(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"] + arguments
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        let deadline = Date().addingTimeInterval(10)
        while Date() < deadline, !LocalRedis.accepts(self.port) { Thread.sleep(forTimeInterval: 0.05) }
    }

    deinit {
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
    }

    /// Whether something accepts connections on the port.
    static func accepts(_ port: Int) -> Bool {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = loopback(port)
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0 }
        }
    }

    /// A loopback port nothing listens on right now.
    static func freePort() -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = loopback(0)
        _ = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        return Int(UInt16(bigEndian: address.sin_port))
    }

    private static func loopback(_ port: Int) -> sockaddr_in {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        return address
    }
}
