import Foundation
import Glibc

/// A response as a test client saw it.
struct TestResponse {
    var status: Int
    var headers: [(name: String, value: String)]
    var body: [UInt8]

    func header(_ name: String) -> String? {
        headers.first { $0.name.lowercased() == name.lowercased() }?.value
    }
    func headers(_ name: String) -> [String] {
        headers.filter { $0.name.lowercased() == name.lowercased() }.map(\.value)
    }
    var text: String { String(decoding: body, as: UTF8.self) }
    var json: [String: Any]? { (try? JSONSerialization.jsonObject(with: Data(body))) as? [String: Any] }
}

enum TestClientError: Error { case connect(Int32), closed, timeout, malformed(String) }

/// A blocking TCP client on 127.0.0.1 for driving the proxy byte by byte.
final class RawClient {
    private var fd: Int32
    private var buffer: [UInt8] = []
    private(set) var peerClosed = false

    /// `receiveBuffer`: `SO_RCVBUF`, set before connecting (a small one makes a slow reader's
    /// window small, so the proxy's output backs up at once).
    init(port: Int, timeout: Double = 10, receiveBuffer: Int32? = nil) throws {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        if var size = receiveBuffer {
            setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size))
        }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard result == 0 else { Glibc.close(fd); throw TestClientError.connect(errno) }
        var tv = timeval(tv_sec: Int(timeout), tv_usec: Int((timeout - Double(Int(timeout))) * 1_000_000))
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
    }

    deinit { if fd >= 0 { Glibc.close(fd) } }

    /// Closes the socket now; `reset` sends a TCP reset (SO_LINGER 0) instead of a FIN.
    func close(reset: Bool = false) {
        guard fd >= 0 else { return }
        if reset {
            var linger = Glibc.linger(l_onoff: 1, l_linger: 0)
            setsockopt(fd, SOL_SOCKET, SO_LINGER, &linger, socklen_t(MemoryLayout<Glibc.linger>.size))
        }
        Glibc.close(fd)
        fd = -1
    }

    /// Makes a blocked `send` give up after `seconds` (it then stops sending).
    func setSendTimeout(_ seconds: Double) {
        var tv = timeval(tv_sec: Int(seconds), tv_usec: Int((seconds - Double(Int(seconds))) * 1_000_000))
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
    }

    /// Exactly `count` more bytes (after whatever a previous read left buffered).
    func receive(count: Int) throws -> [UInt8] { try take(count) }

    func send(_ text: String) { send(Array(text.utf8)) }

    func send(_ bytes: [UInt8]) {
        var offset = 0
        while offset < bytes.count {
            let sent = bytes[offset...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if sent <= 0 { return }
            offset += sent
        }
    }

    /// Half-closes the sending side.
    func shutdownWrite() { shutdown(fd, Int32(SHUT_WR)) }

    /// Reads more bytes into the buffer; false at EOF/timeout/error.
    @discardableResult
    private func fill() -> Bool {
        var chunk = [UInt8](repeating: 0, count: 65536)
        let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
        if n > 0 { buffer.append(contentsOf: chunk[0..<n]); return true }
        if n == 0 { peerClosed = true }
        return false
    }

    private func takeLine() throws -> String {
        while true {
            if let index = findCRLF() {
                let line = String(decoding: buffer[0..<index], as: UTF8.self)
                buffer.removeFirst(index + 2)
                return line
            }
            guard fill() else { throw peerClosed ? TestClientError.closed : TestClientError.timeout }
        }
    }

    private func findCRLF() -> Int? {
        guard buffer.count >= 2 else { return nil }
        for i in 0..<(buffer.count - 1) where buffer[i] == 13 && buffer[i + 1] == 10 { return i }
        return nil
    }

    private func take(_ count: Int) throws -> [UInt8] {
        while buffer.count < count {
            guard fill() else { throw peerClosed ? TestClientError.closed : TestClientError.timeout }
        }
        let out = Array(buffer[0..<count])
        buffer.removeFirst(count)
        return out
    }

    /// Reads one response (skipping 1xx unless `interim` is true). `head` marks a HEAD request.
    func readResponse(head: Bool = false, interim: Bool = false) throws -> TestResponse {
        while true {
            let statusLine = try takeLine()
            let parts = statusLine.split(separator: " ", maxSplits: 2)
            guard parts.count >= 2, let status = Int(parts[1]) else { throw TestClientError.malformed(statusLine) }
            var headers: [(String, String)] = []
            while true {
                let line = try takeLine()
                if line.isEmpty { break }
                guard let colon = line.firstIndex(of: ":") else { throw TestClientError.malformed(line) }
                headers.append((String(line[..<colon]), line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)))
            }
            var response = TestResponse(status: status, headers: headers, body: [])
            if status < 200 {
                if interim { return response }
                continue
            }
            if head || status == 204 || status == 304 { return response }
            if response.header("transfer-encoding")?.lowercased() == "chunked" {
                while true {
                    let sizeLine = try takeLine()
                    guard let size = Int(sizeLine.split(separator: ";")[0], radix: 16) else { throw TestClientError.malformed(sizeLine) }
                    if size == 0 {
                        while try !takeLine().isEmpty {}
                        break
                    }
                    response.body += try take(size)
                    _ = try take(2)
                }
            } else if let length = response.header("content-length").flatMap({ Int($0) }) {
                response.body = try take(length)
            } else {
                while fill() {}
                response.body = buffer
                buffer.removeAll()
            }
            return response
        }
    }

    /// Whether the peer closes the connection (EOF) within the receive timeout, with no more bytes.
    func waitForClose() -> Bool {
        while !peerClosed {
            if !fill() { return peerClosed }
        }
        return true
    }

    /// Everything until EOF or timeout.
    func readAll() -> [UInt8] {
        while fill() {}
        let out = buffer
        buffer.removeAll()
        return out
    }
}
