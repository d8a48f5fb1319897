import Foundation

/// A Debian nginx serving HTTPS (`listen 127.0.0.1:PORT ssl;`) on 127.0.0.1 with the given certificate,
/// its own prefix directory and an access log in the same format as ``Nginx``.
final class TLSNginx {
    let process = Process()
    let port: Int
    let directory: URL
    var accessLog: URL { directory.appendingPathComponent("access.log") }

    /// Starts nginx with `locations` inside an ssl server block using `certificate` / `key` (PEM paths).
    init(certificate: String, key: String, locations: String) throws {
        guard let binary = Nginx.binary else { throw TestClientError.malformed("nginx is not installed (make deps)") }
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("tlsnginx-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        port = try Nginx.freePort()
        let d = directory.path
        let config = """
        daemon off;
        master_process off;
        worker_processes 1;
        pid \(d)/nginx.pid;
        error_log \(d)/error.log info;
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
            listen 127.0.0.1:\(port) ssl;
            ssl_certificate \(certificate);
            ssl_certificate_key \(key);
            ssl_protocols TLSv1.2 TLSv1.3;
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
        throw TestClientError.malformed("TLS nginx did not start: \(log)")
    }

    deinit {
        if process.isRunning { process.terminate(); process.waitUntilExit() }
        try? FileManager.default.removeItem(at: directory)
    }

    /// Access-log lines (nginx writes them as each request completes).
    func logLines() -> [String] {
        ((try? String(contentsOf: accessLog, encoding: .utf8)) ?? "").split(separator: "\n").map(String.init)
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
}
