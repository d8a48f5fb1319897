import EventLoop

/// Idle keep-alive connections to backends, per destination, on one worker loop.
///
/// Most recently used first (LIFO): the warmest connection is the least likely to have been
/// closed by the backend's idle timeout.
final class UpstreamPool {
    private var idle: [String: [UpstreamConnection]] = [:]
    private let maxIdlePerKey: Int
    /// Connections created since start (for tests and metrics).
    private(set) var connectionsOpened = 0

    init(maxIdlePerKey: Int = 128) {
        self.maxIdlePerKey = maxIdlePerKey
    }

    /// An idle connection to `key`, or a new one to `host:port`.
    func acquire(key: String, host: String, port: Int, on loop: EventLoop) -> UpstreamConnection? {
        if var list = idle[key], let upstream = list.popLast() {
            idle[key] = list
            upstream.idleIn = nil
            return upstream
        }
        connectionsOpened += 1
        return UpstreamConnection.connect(host: host, port: port, poolKey: key, on: loop)
    }

    /// Returns a connection whose last exchange completed cleanly.
    func release(_ upstream: UpstreamConnection) {
        upstream.owner = nil
        var list = idle[upstream.poolKey] ?? []
        guard list.count < maxIdlePerKey else { upstream.close(); return }
        upstream.idleIn = self
        list.append(upstream)
        idle[upstream.poolKey] = list
    }

    /// Forgets a connection that was retired while idle.
    func remove(_ upstream: UpstreamConnection) {
        guard var list = idle[upstream.poolKey] else { return }
        list.removeAll { $0 === upstream }
        idle[upstream.poolKey] = list.isEmpty ? nil : list
    }

    /// Closes every idle connection.
    func closeAll() {
        let all = idle.values.flatMap { $0 }
        idle.removeAll()
        for upstream in all { upstream.close() }
    }

    /// Number of idle connections (for tests and metrics).
    var idleCount: Int { idle.values.reduce(0) { $0 + $1.count } }
}
