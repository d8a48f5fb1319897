/// Carries a value that belongs to one loop across threads, so it can be handed back to that
/// loop with ``EventLoop/execute(_:)``.
///
/// The checker cannot prove this safe; the rule that makes it so is that ``value`` is only
/// touched on ``loop``'s thread — use ``run(_:)``, which hops there. Debug builds check it (as
/// SwiftNIO's `NIOLoopBound` does): wrapping a value off its loop's thread, or a value reaching
/// its body elsewhere, stops the process.
public struct LoopBound<Value>: @unchecked Sendable {
    /// The loop that owns the value.
    public let loop: EventLoop
    private let value: Value

    /// Wraps `value`, which must have been created on (and belong to) `loop`.
    public init(_ value: Value, on loop: EventLoop) {
        loop.assertConfined()
        self.value = value
        self.loop = loop
    }

    /// Runs `body` with the value on its own loop's thread.
    public func run(_ body: @escaping @Sendable (Value) -> Void) {
        let value = self.value
        let box = UncheckedBox(value)
        loop.execute {
            loop.assertConfined()
            body(box.value)
        }
    }
}

/// Internal: lets ``LoopBound`` move its value into a `@Sendable` closure.
private struct UncheckedBox<Value>: @unchecked Sendable {
    let value: Value
    init(_ value: Value) { self.value = value }
}
