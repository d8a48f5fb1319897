/// A reference to an object that something else keeps alive, through which calls neither retain
/// nor release it: for an object that refers back to its owner on a loop's hot path (a stream to
/// its connection), where each call through a `var`, an `unowned` or an `unowned(unsafe)`
/// reference costs a retain and a release, two atomic operations (a `let` holding a class costs
/// neither, but a back reference cannot own what it refers to).
///
/// The holder must know the object is alive when it calls ``with(_:)`` (its owner says so, as an
/// HTTP/2 connection's load says whether the connection is gone), and the call must not make it
/// go away before it returns (no call that closes and drops the object in place).
public struct UnretainedReference<Object: AnyObject> {
    @usableFromInline let reference: Unmanaged<Object>

    /// A reference to `object`, not retained.
    @inlinable
    public init(_ object: Object) { reference = .passUnretained(object) }

    /// Calls `body` with the object, which must be alive and stay alive until `body` returns.
    @inlinable
    public func with<Result>(_ body: (Object) -> Result) -> Result {
        reference._withUnsafeGuaranteedRef(body)
    }

    /// The object, retained for as long as the caller keeps it (for calls off the hot path).
    @inlinable
    public var object: Object { reference.takeUnretainedValue() }
}
