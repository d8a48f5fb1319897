import Foundation
import Glibc

/// A blocking HTTP/1.1 client on a plain TCP socket to 127.0.0.1, for driving a server byte by
/// byte. Every read waits at most the receive timeout (`SO_RCVTIMEO`) and every blocked send at
/// most the send timeout (`SO_SNDTIMEO`, the same unless ``setSendTimeout(_:)`` changes it), so
/// no test can hang on it.
public final class RawClient {
    private var fd: Int32
    private var buffer: [UInt8] = []
    /// True once the peer closed the connection (a read saw EOF; a reset does not count).
    public private(set) var peerClosed = false
    /// True once a read failed with `ECONNRESET`.
    private var peerReset = false

    /// Connects to `127.0.0.1:port`. `timeout`: seconds each read, and each blocked send, may
    /// wait. `receiveBuffer`: `SO_RCVBUF`, set before connecting (a small one makes a slow
    /// reader's window small, so the server's output backs up at once).
    public init(port: Int, timeout: Double = 10, receiveBuffer: Int32? = nil) throws {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw TestClientError.connect(errno) }
        if var size = receiveBuffer {
            setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size))
        }
        var tv = Self.timeval(seconds: timeout)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard result == 0 else {
            let error = errno
            Glibc.close(fd)
            throw TestClientError.connect(error)
        }
    }

    deinit { if fd >= 0 { Glibc.close(fd) } }

    /// Closes the socket now; `reset` sends a TCP reset (SO_LINGER 0) instead of a FIN.
    public func close(reset: Bool = false) {
        guard fd >= 0 else { return }
        if reset {
            var linger = Glibc.linger(l_onoff: 1, l_linger: 0)
            setsockopt(fd, SOL_SOCKET, SO_LINGER, &linger, socklen_t(MemoryLayout<Glibc.linger>.size))
        }
        Glibc.close(fd)
        fd = -1
    }

    /// Makes a blocked `send` give up after `seconds` (it then stops sending).
    public func setSendTimeout(_ seconds: Double) {
        var tv = Self.timeval(seconds: seconds)
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
    }

    /// Sends `text` as UTF-8, like the byte variant.
    public func send(_ text: String) { send(Array(text.utf8)) }

    /// Sends every byte, or stops quietly at the first failure (a closed or reset peer, or the
    /// send timeout).
    public func send(_ bytes: [UInt8]) {
        var offset = 0
        while offset < bytes.count {
            let sent = bytes[offset...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if sent <= 0 { return }
            offset += sent
        }
    }

    /// Half-closes the sending side.
    public func shutdownWrite() { shutdown(fd, Int32(SHUT_WR)) }

    /// Sends a request for `path` (with `Host: 127.0.0.1`, `headers`, and a Content-Length when
    /// there is a body or the method is POST) and reads its response (see ``readResponse(head:interim:)``).
    public func request(_ method: String, _ path: String, headers: [(name: String, value: String)] = [],
                        body: [UInt8] = []) throws -> TestResponse {
        var text = "\(method) \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        for (name, value) in headers { text += "\(name): \(value)\r\n" }
        if !body.isEmpty || method == "POST" { text += "Content-Length: \(body.count)\r\n" }
        text += "\r\n"
        send(Array(text.utf8) + body)
        return try readResponse(head: method == "HEAD")
    }

    /// Reads one response: skips 1xx responses unless `interim` is true (then returns the first
    /// one); `head` marks the answer to a HEAD request (no body). The body is framed by
    /// chunked encoding, Content-Length, or else the end of the connection.
    public func readResponse(head: Bool = false, interim: Bool = false) throws -> TestResponse {
        while true {
            let statusLine = try takeLine()
            let parts = statusLine.split(separator: " ", maxSplits: 2)
            guard parts.count >= 2, let status = Int(parts[1]) else { throw TestClientError.malformed(statusLine) }
            var headers: [(name: String, value: String)] = []
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
                response.body = try takeChunkedBody()
            } else if let length = response.header("content-length").flatMap({ Int($0) }) {
                response.body = try take(length)
            } else {
                response.body = readAll()
            }
            return response
        }
    }

    /// Exactly `count` more bytes (after whatever a previous read left buffered).
    public func receive(count: Int) throws -> [UInt8] { try take(count) }

    /// Everything until EOF or the receive timeout (after whatever a previous read left buffered).
    public func readAll() -> [UInt8] {
        while fill() {}
        let out = buffer
        buffer.removeAll()
        return out
    }

    /// Whether the peer closes the connection (EOF) within the receive timeout; bytes that
    /// arrive meanwhile are kept buffered. `acceptingReset`: a connection reset counts as closed too.
    public func waitForClose(acceptingReset: Bool = false) -> Bool {
        while !peerClosed {
            if !fill() { return peerClosed || (acceptingReset && peerReset) }
        }
        return true
    }

    /// Reads more bytes into the buffer; false at EOF, timeout or error.
    @discardableResult
    private func fill() -> Bool {
        var chunk = [UInt8](repeating: 0, count: 65536)
        let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
        if n > 0 { buffer.append(contentsOf: chunk[0..<n]); return true }
        if n == 0 { peerClosed = true } else if errno == ECONNRESET { peerReset = true }
        return false
    }

    private func takeChunkedBody() throws -> [UInt8] {
        var body: [UInt8] = []
        while true {
            let sizeLine = try takeLine()
            guard let size = Int(sizeLine.split(separator: ";", omittingEmptySubsequences: false)[0], radix: 16) else {
                throw TestClientError.malformed(sizeLine)
            }
            if size == 0 {
                while try !takeLine().isEmpty {}
                return body
            }
            body += try take(size)
            _ = try take(2)
        }
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

    private static func timeval(seconds: Double) -> Glibc.timeval {
        Glibc.timeval(tv_sec: Int(seconds), tv_usec: Int((seconds - Double(Int(seconds))) * 1_000_000))
    }
}

/// Sends one request on a fresh ``RawClient`` (a `timeout` of 5 s) and reads its response.
public func fetch(port: Int, _ path: String, method: String = "GET", headers: [(name: String, value: String)] = [],
                  body: [UInt8] = [], timeout: Double = 5) throws -> TestResponse {
    try RawClient(port: port, timeout: timeout).request(method, path, headers: headers, body: body)
}
