import Foundation
import Glibc

/// A response as read off the wire by ``RawClient``.
public struct TestResponse {
    public var status: Int
    public var headers: [(String, String)]
    public var body: [UInt8]

    public func header(_ name: String) -> String? {
        headers.first { $0.0.lowercased() == name.lowercased() }?.1
    }

    public var text: String { String(decoding: body, as: UTF8.self) }

    /// The body parsed as JSON (Foundation), or nil.
    public var json: Any? { try? JSONSerialization.jsonObject(with: Data(body), options: [.fragmentsAllowed]) }
    public var jsonObject: [String: Any]? { json as? [String: Any] }
}

/// A blocking loopback HTTP/1.1 client on a plain socket; every read waits at most
/// `timeout` (SO_RCVTIMEO), so no test can hang.
public final class RawClient {
    private let fd: Int32
    private var buffer: [UInt8] = []

    public init(port: Int, timeout: Int = 5) throws {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw RawClientError.system("socket") }
        var tv = timeval(tv_sec: timeout, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard result == 0 else { Glibc.close(fd); throw RawClientError.system("connect errno \(errno)") }
    }

    deinit { Glibc.close(fd) }

    public func send(_ text: String) { send(Array(text.utf8)) }

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

    /// Reads more bytes; false on EOF, error or timeout.
    private func fill() -> Bool {
        var chunk = [UInt8](repeating: 0, count: 65536)
        let count = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
        guard count > 0 else { return false }
        buffer.append(contentsOf: chunk[0..<count])
        return true
    }

    /// Reads one response (Content-Length framed, or no body for HEAD / 1xx / 204 / 304).
    public func readResponse(method: String = "GET") -> TestResponse? {
        let separator: [UInt8] = [13, 10, 13, 10]
        var headEnd: Int?
        while headEnd == nil {
            if buffer.count >= 4 {
                headEnd = (0...(buffer.count - 4)).first { Array(buffer[$0..<$0 + 4]) == separator }
            }
            if headEnd == nil, !fill() { return nil }
        }
        let head = String(decoding: buffer[0..<headEnd!], as: UTF8.self)
        var lines = head.components(separatedBy: "\r\n")
        let statusLine = lines.removeFirst().split(separator: " ")
        guard statusLine.count >= 2, let status = Int(statusLine[1]) else { return nil }
        let headers: [(String, String)] = lines.compactMap { line in
            guard let colon = line.firstIndex(of: ":") else { return nil }
            return (String(line[..<colon]), line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces))
        }
        buffer.removeFirst(headEnd! + 4)
        var response = TestResponse(status: status, headers: headers, body: [])
        let noBody = method == "HEAD" || status < 200 || status == 204 || status == 304
        let length = noBody ? 0 : Int(response.header("Content-Length") ?? "0") ?? 0
        while buffer.count < length {
            if !fill() { return nil }
        }
        response.body = Array(buffer[0..<length])
        buffer.removeFirst(length)
        return response
    }

    /// Sends a request and reads its response.
    public func request(_ method: String, _ path: String, headers: [(String, String)] = [], body: [UInt8] = []) -> TestResponse? {
        var text = "\(method) \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        for (name, value) in headers { text += "\(name): \(value)\r\n" }
        if !body.isEmpty || method == "POST" { text += "Content-Length: \(body.count)\r\n" }
        text += "\r\n"
        send(Array(text.utf8) + body)
        return readResponse(method: method)
    }

    /// True when the server closes the connection (EOF or reset) before the timeout, after
    /// discarding anything still unread.
    public func waitForClose() -> Bool {
        while true {
            var byte: UInt8 = 0
            let count = recv(fd, &byte, 1, 0)
            if count == 0 { return true }
            if count < 0 { return errno == ECONNRESET }
        }
    }
}

public enum RawClientError: Error {
    case system(String)
}

/// One-shot request on a fresh connection.
public func fetch(port: Int, _ path: String, method: String = "GET", headers: [(String, String)] = [],
           body: [UInt8] = []) -> TestResponse? {
    guard let client = try? RawClient(port: port) else { return nil }
    return client.request(method, path, headers: headers, body: body)
}
