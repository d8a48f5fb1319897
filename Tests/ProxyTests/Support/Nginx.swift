import Foundation

/// A Debian nginx as a real backend on 127.0.0.1, with its own prefix directory and access log.
final class Nginx {
    let process = Process()
    let port: Int
    let directory: URL
    var accessLog: URL { directory.appendingPathComponent("access.log") }

    static var binary: String? {
        ["/usr/sbin/nginx", "/usr/local/sbin/nginx"].first { FileManager.default.isExecutableFile(atPath: $0) }
    }

    /// Starts nginx with `locations` inside its server block.
    init(locations: String) throws {
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
            listen 127.0.0.1:\(port);
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
        // Wait until it accepts connections.
        let deadline = Date().addingTimeInterval(10)
        while Date() < deadline {
            if (try? RawClient(port: port, timeout: 1)) != nil { return }
            Thread.sleep(forTimeInterval: 0.05)
        }
        throw TestClientError.malformed("nginx did not start")
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
