/// Where a request rewrite writes the regular fields of an HTTP/2 head, one at a time: into a
/// head of its own (``HTTP2Head/FieldWriter``, which copies each), or straight to the codec as
/// the name/value pairs it submits (``RequestFieldPairs``, which copies only what would not
/// outlive the call).
public protocol HTTP2FieldSink {
    /// Appends a field whose bytes stay valid as long as the sink is written to and its head
    /// submitted: a line of the head being rewritten, or a constant. Its name as it is (the
    /// codec lowercases names as it sends them).
    mutating func add(name: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer)
    /// Appends a field whose bytes are valid only during this call (copied).
    mutating func addCopy(name: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer)
    /// Appends a field named `name` (a constant) whose value is valid only during this call:
    /// only the value need be copied.
    mutating func addCopy(name: StaticString, value: UnsafeRawBufferPointer)
}

extension HTTP2FieldSink {
    /// Appends a field named `name` (a constant), its value valid as long as the sink is used.
    @inlinable @inline(__always)
    public mutating func add(name: StaticString, value: UnsafeRawBufferPointer) {
        add(name: UnsafeRawBufferPointer(start: name.utf8Start, count: name.utf8CodeUnitCount), value: value)
    }

    /// Appends a field named `name` (a constant) whose value is valid only during this call,
    /// both copied (a sink that copies everything anyway).
    @inlinable @inline(__always)
    public mutating func addCopy(name: StaticString, value: UnsafeRawBufferPointer) {
        addCopy(name: UnsafeRawBufferPointer(start: name.utf8Start, count: name.utf8CodeUnitCount), value: value)
    }
}
