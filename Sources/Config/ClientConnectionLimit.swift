/// How many client connections the proxy holds at once, and how they are split among workers.
public enum ClientConnectionLimit {
    /// Descriptors kept aside for everything that is not a client connection: listeners, the
    /// admin endpoint, token fetches, libevent's own descriptors, files read on reload.
    public static let reserve = 64

    /// The default `maxClientConnections` for a process allowed `descriptorLimit` open files:
    /// half of what is left after ``reserve``, at least 1.
    ///
    /// Half, because each proxied client connection usually needs an upstream connection too (a
    /// CONNECT tunnel always does): with the other half left for upstreams, a full set of busy
    /// clients still finds descriptors for its backends instead of failing with 502s.
    public static func derived(descriptorLimit: Int) -> Int {
        guard descriptorLimit > reserve else { return 1 }
        return max(1, (descriptorLimit - reserve) / 2)
    }

    /// One worker's share of `total`: divided by `workers`, rounded up, so the shares add up
    /// to at least `total` and every worker may hold at least one connection.
    public static func share(of total: Int, workers: Int) -> Int {
        let workers = max(1, workers)
        return max(1, (total + workers - 1) / workers)
    }
}
