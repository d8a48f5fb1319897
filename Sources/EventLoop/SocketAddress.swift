import CLibevent
import Glibc

/// An IPv4 or IPv6 socket address built from a numeric host and a port (0 allowed).
///
/// Built by hand because `evutil_parse_sockaddr_port` rejects port 0, which tests need.
public struct SocketAddress: Sendable, CustomStringConvertible {
    enum Storage: Sendable {
        case v4(sockaddr_in)
        case v6(sockaddr_in6)
    }
    let storage: Storage

    /// Parses a numeric IPv4 or IPv6 host (no brackets) and a port.
    public init(host: String, port: Int) throws(EventLoopError) {
        guard (0...65535).contains(port) else { throw .address("port \(port) is out of range") }
        var v4 = sockaddr_in()
        if inet_pton(AF_INET, host, &v4.sin_addr) == 1 {
            v4.sin_family = sa_family_t(AF_INET)
            v4.sin_port = in_port_t(UInt16(port).bigEndian)
            storage = .v4(v4)
            return
        }
        var v6 = sockaddr_in6()
        if inet_pton(AF_INET6, host, &v6.sin6_addr) == 1 {
            v6.sin6_family = sa_family_t(AF_INET6)
            v6.sin6_port = in_port_t(UInt16(port).bigEndian)
            storage = .v6(v6)
            return
        }
        throw .address("'\(host)' is not a numeric IPv4 or IPv6 address")
    }

    init(_ storage: Storage) { self.storage = storage }

    /// Copies an IPv4 or IPv6 `sockaddr`.
    init?(sockaddr pointer: UnsafePointer<sockaddr>) {
        switch Int32(pointer.pointee.sa_family) {
        case AF_INET:
            self.storage = pointer.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { .v4($0.pointee) }
        case AF_INET6:
            self.storage = pointer.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { .v6($0.pointee) }
        default:
            return nil
        }
    }

    /// Whether this is a link-local or "this network" address — where cloud metadata services
    /// live (169.254.0.0/16, fe80::/10, 0.0.0.0/8, and their IPv4-mapped IPv6 forms). A proxy
    /// must not be usable to reach them unless a route names them explicitly.
    public var isLinkLocalOrUnspecifiedNetwork: Bool {
        func v4Prohibited(_ a: UInt8, _ b: UInt8) -> Bool { (a == 169 && b == 254) || a == 0 }
        switch storage {
        case .v4(let address):
            let value = UInt32(bigEndian: address.sin_addr.s_addr)
            return v4Prohibited(UInt8(value >> 24), UInt8((value >> 16) & 0xff))
        case .v6(let address):
            let bytes = withUnsafeBytes(of: address.sin6_addr) { Array($0) }
            if bytes[0] == 0xfe && (bytes[1] & 0xc0) == 0x80 { return true }
            let mapped = bytes[0..<10].allSatisfy { $0 == 0 } && bytes[10] == 0xff && bytes[11] == 0xff
            return mapped && v4Prohibited(bytes[12], bytes[13])
        }
    }

    /// Whether this is a loopback address (127.0.0.0/8, ::1, and IPv4-mapped 127.0.0.0/8).
    public var isLoopback: Bool {
        switch storage {
        case .v4(let address):
            return UInt32(bigEndian: address.sin_addr.s_addr) >> 24 == 127
        case .v6(let address):
            let bytes = withUnsafeBytes(of: address.sin6_addr) { Array($0) }
            if bytes[0..<15].allSatisfy({ $0 == 0 }) && bytes[15] == 1 { return true }
            let mapped = bytes[0..<10].allSatisfy { $0 == 0 } && bytes[10] == 0xff && bytes[11] == 0xff
            return mapped && bytes[12] == 127
        }
    }

    /// Whether this is an IPv6 address (IPv4-mapped ones included).
    public var isIPv6: Bool {
        if case .v6 = storage { return true }
        return false
    }

    /// The port in host byte order.
    public var port: Int {
        switch storage {
        case .v4(let a): return Int(UInt16(bigEndian: a.sin_port))
        case .v6(let a): return Int(UInt16(bigEndian: a.sin6_port))
        }
    }

    /// The numeric host (no brackets).
    public var host: String {
        var buffer = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN) + 1)
        switch storage {
        case .v4(var a): inet_ntop(AF_INET, &a.sin_addr, &buffer, socklen_t(buffer.count))
        case .v6(var a): inet_ntop(AF_INET6, &a.sin6_addr, &buffer, socklen_t(buffer.count))
        }
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// "127.0.0.1:8080" or "[::1]:8080".
    public var description: String {
        if case .v6 = storage { return "[\(host)]:\(port)" }
        return "\(host):\(port)"
    }

    func withSockaddr<R>(_ body: (UnsafePointer<sockaddr>, Int32) -> R) -> R {
        switch storage {
        case .v4(var a):
            return withUnsafePointer(to: &a) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { body($0, Int32(MemoryLayout<sockaddr_in>.size)) } }
        case .v6(var a):
            return withUnsafePointer(to: &a) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { body($0, Int32(MemoryLayout<sockaddr_in6>.size)) } }
        }
    }

    /// The local address a socket is bound to.
    static func local(of fd: Int32) -> SocketAddress? {
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let ok = withUnsafeMutablePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) == 0 }
        }
        guard ok else { return nil }
        switch Int32(storage.ss_family) {
        case AF_INET:
            return withUnsafePointer(to: &storage) { $0.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { SocketAddress(.v4($0.pointee)) } }
        case AF_INET6:
            return withUnsafePointer(to: &storage) { $0.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { SocketAddress(.v6($0.pointee)) } }
        default:
            return nil
        }
    }
}
