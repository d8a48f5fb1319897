/// Things done with, kept for reuse, up to a limit: the one way the proxy keeps request heads,
/// buffers, body queues and event lists between the requests and streams that use them (an
/// allocation and a free fewer for each taken). The newest kept is taken first (the one most
/// likely still in cache).
///
/// What is worth keeping (small enough, emptied) is the keeper's rule, checked before
/// ``keep(_:)``. A value type, confined to its owner's thread like the owner.
public struct SpareList<Element> {
    @usableFromInline var elements: [Element] = []
    /// The most it keeps.
    public let limit: Int

    /// An empty list that keeps up to `limit`.
    @inlinable
    public init(limit: Int) {
        self.limit = limit
    }

    /// How many are kept.
    @inlinable
    public var count: Int { elements.count }

    /// Whether ``limit`` are kept: ``keep(_:)`` would let the next one go (a keeper checks
    /// this before emptying one for keeping).
    @inlinable
    public var isFull: Bool { elements.count >= limit }

    /// A kept one, handed over (no longer kept), or nil.
    @inlinable
    public mutating func take() -> Element? {
        elements.popLast()
    }

    /// Keeps `element` unless ``limit`` are kept already (then it goes). Returns whether it
    /// was kept.
    @inlinable
    @discardableResult
    public mutating func keep(_ element: consuming Element) -> Bool {
        guard elements.count < limit else { return false }
        elements.append(element)
        return true
    }

    /// Lets all but the newest `count` go.
    @inlinable
    public mutating func trim(to count: Int) {
        if elements.count > count { elements.removeFirst(elements.count - count) }
    }

    /// Forgets every kept one.
    @inlinable
    public mutating func removeAll() {
        elements.removeAll()
    }
}
