import Foundation

/// Load on several sidecars at once for a bounded time and count: each thread keeps one
/// connection per sidecar and goes round them; every answer is recorded with the bearer token
/// the backend saw (the test backend echoes the request headers).
final class FleetLoad: @unchecked Sendable {
    /// One answered (or failed) request.
    struct Sample {
        /// When the answer arrived (seconds since 1970).
        let time: Double
        /// The status; 0 when the request failed without one.
        let status: Int
        /// The token the backend received (without "Bearer ").
        let token: String?
        /// How long the request took.
        let seconds: Double
    }

    private let lock = NSLock()
    private var samples: [Sample] = []
    private var stopFlag = false

    /// Everything recorded so far.
    var recorded: [Sample] { lock.lock(); defer { lock.unlock() }; return samples }

    /// Asks running ``run(ports:threads:seconds:maxRequests:path:)`` calls to end after their current request.
    func stop() { lock.lock(); stopFlag = true; lock.unlock() }

    private var stopped: Bool { lock.lock(); defer { lock.unlock() }; return stopFlag }

    /// Sends `GET <path><n>` through the sidecars at `ports()` (read per round, so sidecars may come
    /// and go) from `threads` threads for `seconds` (at most `maxRequests` in all).
    func run(ports: @escaping @Sendable () -> [Int], threads: Int, seconds: Double, maxRequests: Int, path: String = "/fleet/") {
        let deadline = Date().addingTimeInterval(seconds)
        let budget = maxRequests / max(threads, 1)
        DispatchQueue.concurrentPerform(iterations: threads) { _ in
            var clients: [Int: SimpleClient] = [:]
            var sent = 0
            while Date() < deadline, sent < budget, !stopped {
                let current = ports()
                if current.isEmpty { Thread.sleep(forTimeInterval: 0.01); continue }
                for port in current where Date() < deadline && sent < budget {
                    sent += 1
                    let started = Date()
                    guard let client = clients[port] ?? SimpleClient(port: port, timeout: 10) else {
                        record(Sample(time: Date().timeIntervalSince1970, status: 0, token: nil, seconds: 0))
                        continue
                    }
                    clients[port] = client
                    client.send("GET \(path)\(sent) HTTP/1.1\r\nHost: api.test\r\n\r\n")
                    guard let response = client.response() else {
                        clients[port] = nil
                        record(Sample(time: Date().timeIntervalSince1970, status: 0, token: nil,
                                      seconds: Date().timeIntervalSince(started)))
                        continue
                    }
                    record(Sample(time: Date().timeIntervalSince1970, status: response.status, token: Self.token(in: response.body),
                                  seconds: Date().timeIntervalSince(started)))
                }
            }
        }
    }

    private func record(_ sample: Sample) {
        lock.lock()
        samples.append(sample)
        lock.unlock()
    }

    /// The bearer token in the backend's echo of the request headers.
    static func token(in body: String) -> String? {
        guard let object = try? JSONSerialization.jsonObject(with: Data(body.utf8)) as? [String: Any],
              let headers = object["headers"] as? [[String]] else { return nil }
        guard let value = headers.first(where: { $0.first?.lowercased() == "authorization" })?.last else { return nil }
        return value.hasPrefix("Bearer ") ? String(value.dropFirst(7)) : value
    }
}
