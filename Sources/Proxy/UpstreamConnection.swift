import EventLoop

/// Receives the events of the upstream connection a session is using.
protocol UpstreamConnectionOwner: AnyObject {
    func upstreamDidConnect(_ upstream: UpstreamConnection)
    func upstreamDidRead(_ upstream: UpstreamConnection)
    func upstreamDidDrain(_ upstream: UpstreamConnection)
    func upstream(_ upstream: UpstreamConnection, didEnd reason: ConnectionEnd)
}

/// One connection to a backend: lent to a client session for one exchange, otherwise idle in the
/// worker's ``UpstreamPool``. While idle, any byte or close from the backend retires it.
final class UpstreamConnection: ConnectionDelegate {
    let connection: Connection
    let poolKey: String
    /// The session using it; `nil` while idle in the pool. Strong: the session drops it when its
    /// exchange ends, which breaks the cycle.
    var owner: (any UpstreamConnectionOwner)?
    /// The pool holding it while idle (a cycle broken when it is taken out or retired).
    var idleIn: UpstreamPool?
    /// How many requests this connection has carried.
    var requestsServed = 0

    private init(connection: Connection, poolKey: String) {
        self.connection = connection
        self.poolKey = poolKey
    }

    /// Starts a new connection to `host:port`.
    static func connect(host: String, port: Int, poolKey: String, on loop: EventLoop) -> UpstreamConnection? {
        let placeholder = DelegateBox()
        guard let connection = Connection.connect(host: host, port: port, on: loop, delegate: placeholder) else { return nil }
        let upstream = UpstreamConnection(connection: connection, poolKey: poolKey)
        connection.delegate = upstream
        connection.startReading()
        return upstream
    }

    /// Closes the socket.
    func close() {
        owner = nil
        idleIn = nil
        connection.close()
    }

    func connectionDidConnect(_ connection: Connection) { owner?.upstreamDidConnect(self) }

    func connectionDidRead(_ connection: Connection) {
        if let owner { owner.upstreamDidRead(self); return }
        // An idle connection must not receive anything: the backend is closing it or misbehaving.
        retireIdle()
    }

    func connectionDidDrain(_ connection: Connection) { owner?.upstreamDidDrain(self) }

    func connection(_ connection: Connection, didEnd reason: ConnectionEnd) {
        if let owner { owner.upstream(self, didEnd: reason); return }
        retireIdle()
    }

    private func retireIdle() {
        let pool = idleIn
        close()
        pool?.remove(self)
    }
}

/// Holds the delegate slot between creating a connection and wrapping it (no events can arrive
/// in between: callbacks are deferred to the next loop iteration).
private final class DelegateBox: ConnectionDelegate {
    func connectionDidRead(_ connection: Connection) {}
    func connection(_ connection: Connection, didEnd reason: ConnectionEnd) {}
}
