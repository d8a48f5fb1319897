import Foundation
import Glibc
import TestSupport

/// A loopback address whose connects never complete: a listener on 127.0.0.2 with backlog 0
/// that never accepts, its accept queue filled first. Linux then drops further SYNs, so a new
/// connect stays in progress (SYN retransmits) until the caller gives up.
final class Blackhole {
    /// The listener's port on 127.0.0.2.
    let port: Int
    private let listenFD: Int32
    private var fillers: [Int32] = []

    init() throws {
        let listenFD = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard listenFD >= 0 else { throw TestClientError.malformed("socket failed: errno \(errno)") }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = 0
        inet_pton(AF_INET, "127.0.0.2", &address.sin_addr)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(listenFD, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0, listen(listenFD, 0) == 0 else {
            Glibc.close(listenFD)
            throw TestClientError.malformed("bind/listen on 127.0.0.2 failed: errno \(errno)")
        }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(listenFD, $0, &length) }
        }
        self.listenFD = listenFD
        port = Int(UInt16(bigEndian: address.sin_port))
        // Backlog 0 admits one completed connection; the second SYN already finds the queue full.
        // Two fillers (non-blocking, never accepted) leave no doubt.
        for _ in 0..<2 {
            let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
            _ = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
            fillers.append(fd)
            usleep(50_000)
        }
    }

    /// How many sockets on this machine are in SYN_SENT towards 127.0.0.2:`port` (from
    /// `/proc/net/tcp`): connects to the blackhole still under way.
    static func pendingConnects(toPort port: Int) -> Int {
        // procfs reports size 0: read to the end rather than by the file's size.
        guard let handle = FileHandle(forReadingAtPath: "/proc/net/tcp") else { return -1 }
        defer { try? handle.close() }
        let table = String(decoding: handle.readDataToEndOfFile(), as: UTF8.self)
        // rem_address is little-endian hex "0200007F:PORT"; state 02 is SYN_SENT.
        let hex = String(port, radix: 16, uppercase: true)
        let remote = "0200007F:" + String(repeating: "0", count: max(0, 4 - hex.count)) + hex
        return table.split(separator: "\n").dropFirst().filter { line in
            let fields = line.split(separator: " ")
            return fields.count > 3 && fields[2] == remote && fields[3] == "02"
        }.count
    }

    deinit {
        for fd in fillers { Glibc.close(fd) }
        Glibc.close(listenFD)
    }
}
