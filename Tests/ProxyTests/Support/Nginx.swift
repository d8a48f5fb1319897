import Foundation
import TestSupport

/// A Debian nginx as a real backend on 127.0.0.1 (plain, or HTTPS with a given certificate),
/// with its own prefix directory and access log.
final class Nginx {
    let process = Process()
    let port: Int
    let directory: URL
    var accessLog: URL { directory.appendingPathComponent("access.log") }

    static var binary: String? {
        ["/usr/sbin/nginx", "/usr/local/sbin/nginx"].first { FileManager.default.isExecutableFile(atPath: $0) }
    }

    /// Starts nginx with `locations` inside its server block; with `tls`, the server speaks
    /// HTTPS with that certificate and key (PEM paths); `http2`: it speaks HTTP/2 (with prior
    /// knowledge in plaintext, by ALPN over TLS).
    init(locations: String, tls: (certificate: String, key: String)? = nil, http2: Bool = false) throws {
        guard let binary = Nginx.binary else { throw TestClientError.malformed("nginx is not installed (make deps)") }
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("nginx-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        port = try Nginx.freePort()
        let d = directory.path
        let config = """
        daemon off;
        master_process off;
        worker_processes 1;
        pid \(d)/nginx.pid;
        error_log \(d)/error.log warn;
        events { worker_connections 256; }
        http {
          client_body_temp_path \(d)/body;
          proxy_temp_path \(d)/proxy;
          fastcgi_temp_path \(d)/fastcgi;
          uwsgi_temp_path \(d)/uwsgi;
          scgi_temp_path \(d)/scgi;
          log_format probe '$connection $connection_requests "$http_authorization" "$request"';
          access_log \(d)/access.log probe;
          keepalive_requests 10000;
          server {
            \(tls.map { "listen 127.0.0.1:\(port) ssl\(http2 ? " http2" : ""); ssl_certificate \($0.certificate); ssl_certificate_key \($0.key); ssl_protocols TLSv1.2 TLSv1.3;" } ?? "listen 127.0.0.1:\(port)\(http2 ? " http2" : "");")
            \(locations)
          }
        }
        """
        let configURL = directory.appendingPathComponent("nginx.conf")
        try config.write(to: configURL, atomically: true, encoding: .utf8)
        process.executableURL = URL(fileURLWithPath: binary)
        process.arguments = ["-p", d, "-c", configURL.path, "-e", "\(d)/error.log"]
        process.standardError = FileHandle.nullDevice
        try process.run()
        // Wait until it accepts TCP connections (a bare connect/close is not logged as a request).
        let deadline = Date().addingTimeInterval(10)
        while Date() < deadline {
            if (try? RawClient(port: port, timeout: 1)) != nil { return }
            if !process.isRunning { break }
            Thread.sleep(forTimeInterval: 0.05)
        }
        let log = (try? String(contentsOfFile: "\(d)/error.log", encoding: .utf8)) ?? ""
        if process.isRunning { process.terminate(); process.waitUntilExit() }
        throw TestClientError.malformed("nginx did not start: \(log)")
    }

    /// HTTPS nginx with `certificate` / `key` (PEM paths).
    convenience init(certificate: String, key: String, locations: String) throws {
        try self.init(locations: locations, tls: (certificate, key))
    }

    /// Polls the access log (bounded by `timeout`) until it has at least `count` lines; returns what it has.
    func waitForLogLines(_ count: Int, timeout: Double = 2) -> [String] {
        let deadline = Date().addingTimeInterval(timeout)
        var lines = logLines()
        while lines.count < count, Date() < deadline {
            Thread.sleep(forTimeInterval: 0.02)
            lines = logLines()
        }
        return lines
    }

    deinit {
        if process.isRunning { process.terminate(); process.waitUntilExit() }
        try? FileManager.default.removeItem(at: directory)
    }

    /// Access-log lines (nginx writes them as each request completes).
    func logLines() -> [String] {
        ((try? String(contentsOf: accessLog, encoding: .utf8)) ?? "").split(separator: "\n").map(String.init)
    }

    static func freePort() throws -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) } }
        _ = withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) } }
        return Int(UInt16(bigEndian: address.sin_port))
    }
}
