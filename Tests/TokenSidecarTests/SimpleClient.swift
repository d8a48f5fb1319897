import Foundation
import Glibc

/// A minimal blocking HTTP/1.1 client on 127.0.0.1 for process-level tests.
final class SimpleClient {
    private let fd: Int32
    private var buffer: [UInt8] = []

    init?(port: Int, timeout: Int = 15) {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let ok = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0 }
        }
        guard ok else { Glibc.close(fd); return nil }
        var tv = timeval(tv_sec: timeout, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
    }

    deinit { Glibc.close(fd) }

    func send(_ text: String) {
        let bytes = Array(text.utf8)
        _ = bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
    }

    /// Reads one response with a Content-Length body; returns (status, headers, body) or nil.
    func response() -> (status: Int, headers: [String: String], body: String)? {
        func fill() -> Bool {
            var chunk = [UInt8](repeating: 0, count: 65536)
            let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n <= 0 { return false }
            buffer += chunk[0..<n]
            return true
        }
        var headEnd: Int?
        while headEnd == nil {
            if buffer.count >= 4 {
                for i in 0...(buffer.count - 4) where buffer[i] == 13 && buffer[i + 1] == 10 && buffer[i + 2] == 13 && buffer[i + 3] == 10 {
                    headEnd = i
                    break
                }
            }
            if headEnd == nil && !fill() { return nil }
        }
        let head = String(decoding: buffer[0..<headEnd!], as: UTF8.self)
        buffer.removeFirst(headEnd! + 4)
        let lines = head.components(separatedBy: "\r\n")
        let parts = lines[0].split(separator: " ")
        guard parts.count >= 2, let status = Int(parts[1]) else { return nil }
        var headers: [String: String] = [:]
        for line in lines.dropFirst() {
            if let colon = line.firstIndex(of: ":") {
                headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
            }
        }
        let length = Int(headers["content-length"] ?? "0") ?? 0
        while buffer.count < length { if !fill() { return nil } }
        let body = String(decoding: buffer[0..<length], as: UTF8.self)
        buffer.removeFirst(length)
        return (status, headers, body)
    }
}

/// A running `token-sidecar run` process whose first log line gave its address.
final class SidecarProcess {
    let process = Process()
    let port: Int
    /// The admin listener's port, when `waitForAdmin` was set.
    private(set) var adminPort: Int?
    private let errPipe = Pipe()
    /// Log lines read while starting.
    private(set) var startupLines: [String] = []

    init(configPath: String, environment: [String: String] = [:], arguments: [String] = [], waitForAdmin: Bool = false) throws {
        process.executableURL = XCTestCaseBinary.url
        process.arguments = ["run", "--config", configPath] + arguments
        process.environment = childEnvironment(environment)
        process.standardError = errPipe
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        let reader = errPipe.fileHandleForReading
        func readLine() -> Data {
            var line = Data()
            while true {
                let byte = reader.readData(ofLength: 1)
                if byte.isEmpty || byte == Data([10]) { break }
                line.append(byte)
            }
            return line
        }
        func portIn(_ object: [String: Any]?) -> Int? {
            guard let address = object?["address"] as? String, let colon = address.lastIndex(of: ":") else { return nil }
            return Int(address[address.index(after: colon)...])
        }
        // The "listening" line is normally the first, but the token loop starts first and its
        // first fetch may log before it (a fast local token server, a slow sanitizer build).
        var found: Int?
        while found == nil && startupLines.count < 50 {
            let line = readLine()
            if line.isEmpty { break }
            startupLines.append(String(decoding: line, as: UTF8.self))
            let object = try? JSONSerialization.jsonObject(with: line) as? [String: Any]
            if object?["msg"] as? String == "listening" { found = portIn(object) }
        }
        guard let port = found else {
            process.terminate()
            throw CocoaError(.fileReadCorruptFile, userInfo: [NSLocalizedDescriptionKey: "no listening line: \(startupLines)"])
        }
        self.port = port
        while waitForAdmin && adminPort == nil {
            let line = readLine()
            if line.isEmpty { break }
            startupLines.append(String(decoding: line, as: UTF8.self))
            let object = try? JSONSerialization.jsonObject(with: line) as? [String: Any]
            if object?["msg"] as? String == "admin listening" { adminPort = portIn(object) }
        }
    }

    func signal(_ number: Int32) { kill(process.processIdentifier, number) }

    /// Waits (bounded) for the process to exit; returns its status, or nil if it did not exit.
    func waitForExit(timeout: TimeInterval) -> Int32? {
        let deadline = Date().addingTimeInterval(timeout)
        while process.isRunning && Date() < deadline { Thread.sleep(forTimeInterval: 0.05) }
        if process.isRunning { return nil }
        return process.terminationStatus
    }

    /// Everything logged after the first line (read once the process has exited).
    func remainingLog() -> String {
        String(decoding: errPipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
    }

    deinit {
        // Bounded: a child blocked writing to a pipe nobody reads (a wedged log reader, or a
        // sanitizer report at exit) cannot act on SIGTERM, so it gets SIGKILL after 10 s.
        guard process.isRunning else { return }
        process.terminate()
        if waitForExit(timeout: 10) == nil {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
    }
}

import XCTest
/// The binary's location for non-XCTestCase helpers.
enum XCTestCaseBinary {
    static var url: URL { XCTestCase.sidecarBinary }
}
