/// What ``UpstreamPoolState`` asks its driver to do. Each event returns one of these; none
/// allocates on the request path (no arrays, no indirect cases).
extension UpstreamPoolState {
    /// Identifies one upstream connection for as long as it is open (never reused).
    typealias ConnectionID = Int
    /// Identifies one request asking for a connection (assigned by the driver).
    typealias WaiterID = Int

    /// The answer to ``UpstreamPoolState/request(key:waiter:checkStale:now:)`` (and what follows
    /// a stale peek).
    enum RequestAction: Equatable {
        /// Hand this idle connection to the waiter now; it is leased.
        case lease(ConnectionID)
        /// Check this idle connection for staleness (a non-blocking peek: has the backend closed
        /// it or sent something?) and report with ``UpstreamPoolState/peekCompleted(_:stale:now:)``
        /// before any other event.
        case peek(ConnectionID)
        /// Open a new connection with this ID for the waiter (it is leased from the start).
        /// When `replacing` is set, first close that idle connection: it made room under the
        /// limit for a request that must not reuse a connection (the state already forgot it).
        case create(ConnectionID, replacing: ConnectionID?)
        /// The waiter is queued; it is served later by a ``SlotAction/create(_:for:)`` or a
        /// ``ReleaseAction/handOver(_:to:)`` / ``ReleaseAction/replace(_:with:for:)``, unless
        /// it cancels first.
        case enqueued
        /// The key's queue is full: answer the request as overloaded.
        case rejected
    }

    /// The answer to ``UpstreamPoolState/peekCompleted(_:stale:now:)``.
    enum PeekAction: Equatable {
        /// The connection is fine: hand it to the waiter; it is leased.
        case lease(ConnectionID)
        /// The connection is stale: close it (the state already forgot it), then do `then` for
        /// the same waiter.
        case discard(ConnectionID, then: RequestAction)
    }

    /// The answer to ``UpstreamPoolState/released(_:now:)``.
    enum ReleaseAction: Equatable {
        /// The connection is idle now: arm its idle timeout (`idleTimeout`).
        case pool(ConnectionID, idleTimeout: Duration)
        /// Give the connection to this queued waiter (it stays leased).
        case handOver(ConnectionID, to: WaiterID)
        /// Close the released connection and open a new one with the second ID for the queued
        /// waiter: it must not reuse connections to a backend that closes them eagerly.
        case replace(ConnectionID, with: ConnectionID, for: WaiterID)
        /// Close the connection (too many idle ones, or the key is above a lowered limit).
        case close(ConnectionID)
    }

    /// What to do when a connection slot may have become free.
    enum SlotAction: Equatable {
        /// Nothing.
        case none
        /// Open a new connection with this ID for the queued waiter (leased from the start).
        case create(ConnectionID, for: WaiterID)
    }

    /// The answer to ``UpstreamPoolState/idleTimeoutFired(_:now:)``.
    enum IdleTimeoutAction: Equatable {
        /// The connection was not idle (any more): nothing to do.
        case ignore
        /// Close the idle connection (the state already forgot it).
        case close(ConnectionID)
    }

    /// One step of ``UpstreamPoolState/limitsChanged(limit:idleTimeout:)``.
    enum LimitsAction: Equatable {
        /// Close this idle connection: its key is above the lowered limit.
        case close(ConnectionID)
        /// Open a new connection with this ID for a queued waiter: the limit was raised.
        case create(ConnectionID, for: WaiterID)
    }

    /// What ``UpstreamPoolState/closeAll()`` leaves to the driver.
    struct CloseAllActions: Equatable {
        /// Idle connections to close (the state already forgot them).
        var close: [ConnectionID] = []
        /// Queued waiters that were dropped without a connection.
        var dropped: [WaiterID] = []
    }

    /// Per-key counts for gauges.
    struct KeyCounts: Equatable {
        /// Open connections (connecting, leased or idle).
        var open: Int
        /// Idle connections.
        var idle: Int
        /// Leased connections whose TCP/TLS setup has not completed.
        var connecting: Int
        /// Queued waiters.
        var waiting: Int
    }
}
