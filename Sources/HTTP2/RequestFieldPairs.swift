import CNghttp2

/// The regular fields of a request head the codec is submitting, written by the rewrite as the
/// name/value pairs nghttp2 takes (``HTTP2Codec/submitRequest(method:scheme:authority:path:copyBytes:endStream:write:)``):
/// a field whose bytes outlive the submit — a kept line of the app's head, a constant — as a
/// pair pointing at them; one whose bytes do not — the token, a proof, a length written out —
/// copied into storage the codec keeps, and a pair pointing there. nghttp2 copies every pair
/// as it takes the head, so nothing here needs to last beyond the call.
///
/// (Each field was first copied into the codec's storage and read back into a pair: about
/// 150 instructions a field, six of a gRPC call.)
public struct RequestFieldPairs: HTTP2FieldSink {
    /// Where the pairs go (after the pseudo-header fields).
    private let pairs: NameValueList
    /// Storage for the copied fields (their names and values back to back).
    private let copies: UnsafeMutableRawBufferPointer
    /// How much of it is used.
    private var used = 0

    init(pairs: NameValueList, copies: UnsafeMutableRawBufferPointer) {
        self.pairs = pairs
        self.copies = copies
    }

    public mutating func add(name: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer) {
        // (The rewrite leaves out what HTTP/2 forbids as it writes: not looked for again.)
        assert(!HTTP2Codec.isConnectionSpecific(name: name, value: value, named: []),
               "a rewritten head holds a connection-specific field")
        pairs.append(HTTP2Codec.pair(name: Self.mutable(name), count: name.count, value: Self.mutable(value), count: value.count))
    }

    public mutating func addCopy(name: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer) {
        let name = copy(name)
        add(name: name, value: copy(value))
    }

    /// The name stays the constant it is (nghttp2 gets the lowercase one, not a copy of it to
    /// look up again); only the value is copied.
    public mutating func addCopy(name: StaticString, value: UnsafeRawBufferPointer) {
        add(name: UnsafeRawBufferPointer(start: name.utf8Start, count: name.utf8CodeUnitCount), value: copy(value))
    }

    /// `bytes` copied after what the copies hold, valid until the submit returns.
    private mutating func copy(_ bytes: UnsafeRawBufferPointer) -> UnsafeRawBufferPointer {
        precondition(used + bytes.count <= copies.count, "an HTTP/2 request head outgrew the size it was made with")
        let start = copies.baseAddress.unsafelyUnwrapped + used
        if let from = bytes.baseAddress { start.copyMemory(from: from, byteCount: bytes.count) }
        used += bytes.count
        return UnsafeRawBufferPointer(start: start, count: bytes.count)
    }

    /// `bytes`' start as nghttp2 takes it (`char *`: it copies the pairs and never writes
    /// through them); a valid address for an empty one.
    @inline(__always)
    private static func mutable(_ bytes: UnsafeRawBufferPointer) -> UnsafeMutablePointer<UInt8> {
        UnsafeMutablePointer(mutating: (bytes.baseAddress ?? UnsafeRawPointer(bitPattern: 1)!).assumingMemoryBound(to: UInt8.self))
    }
}
