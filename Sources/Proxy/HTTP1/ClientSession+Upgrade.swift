import EventLoop
import HTTP1

/// Switching protocols: after a `101` to a request that asked for it, the client connection and
/// the upstream connection that carried the request leave HTTP and become one ``Tunnel``.
extension ClientSession {
    /// Writes the `101` to the client, takes the upstream connection out of the pool, and hands
    /// both to a tunnel that relays until either side ends. The token earned a success (as with
    /// a 2xx). The request is counted and logged once, when the tunnel ends, with status 101 and
    /// the bytes relayed each way.
    func upgrade(_ io: ExchangeIO) {
        disarm()
        headTimer.stop()
        current = nil
        let upstream = io.upstream
        io.upstream = nil
        guard let head = io.switchingHead, let stream = upstream?.handOver() else {
            upstream?.close()
            account(io, status: 502, error: "proxy_internal_error")
            abort()
            return
        }
        io.switchingHead = nil
        if let credential = io.decision.credential, credential.refreshable, let token = io.token {
            credential.accepted(token)
        }
        client.output.append(head)
        let context = self.context
        let tunnel = Tunnel(client: client, upstream: stream, context: context, upgrade: Tunnel.Upgrade(
            route: io.decision.routeName ?? "unrouted", idle: context.timeouts.upgradedIdle,
            lifetime: io.decision.upgrades.lifetime, websocket: io.upgrade?.name == "websocket",
            ended: { bytesUp, bytesDown in
                ClientSession.account(io, context: context, status: 101, error: nil, bytesIn: bytesUp, bytesOut: bytesDown)
            }))
        // Adopt first: a drain must never see a moment with neither the session nor the tunnel.
        context.adoptTunnel(tunnel)
        // The tunnel takes the client's output over uncounted (see BufferBudget).
        releaseOutputCharge()
        context.remove(self)
        client.delegate = nil
        tunnel.start()
        context.drainIfDraining(tunnel)
    }
}
