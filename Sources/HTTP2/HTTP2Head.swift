import Glibc
import HTTP1

/// The head of an HTTP/2 message: its pseudo-header fields apart, its regular fields in order.
///
/// A request has `method`, `scheme`, `authority` and `path` (a `CONNECT` only `method` and
/// `authority`, RFC 9113 §8.5); a response has `status`. Field names are lowercase on the wire
/// (RFC 9113 §8.2.1): received ones already are (the codec refuses others), and the codec
/// lowercases the names of fields it sends.
public struct HTTP2Head: Equatable, Sendable {
    /// `:method`.
    public var method: String?
    /// `:scheme`.
    public var scheme: String?
    /// `:authority`.
    public var authority: String?
    /// `:path`.
    public var path: String?
    /// `:protocol` (RFC 8441's extended CONNECT).
    public var extendedProtocol: String?
    /// `:status`, as a number.
    public var status: Int?
    /// The regular fields: each name, then its value, back to back, in order, and where each
    /// ends. A received head keeps them as nghttp2 hands them over, with no String per field: a
    /// request goes on as a request head written from these bytes
    /// (``HTTP2RequestHeadValidator``).
    private var store = HTTP2FieldStore.empty

    /// The regular fields, in the order received or to be sent (made from the bytes they are
    /// kept as: ``forEachField(_:)`` and ``firstField(_:)`` read them without Strings).
    public var fields: HTTPFields {
        get {
            var fields = HTTPFields()
            fields.fields.reserveCapacity(fieldCount)
            forEachField { name, value in
                fields.append(HTTPField(name: String(decoding: name, as: UTF8.self),
                                        value: String(decoding: value, as: UTF8.self)))
            }
            return fields
        }
        set {
            var bytes = 0
            for field in newValue { bytes += field.name.utf8.count + field.value.utf8.count }
            if isKnownUniquelyReferenced(&store) {
                store.removeAll()
                if !store.fits(bytes: bytes, ends: newValue.count * 2) { store.grow(bytes: bytes, ends: newValue.count * 2) }
            } else {
                store = HTTP2FieldStore(bytes: bytes, ends: newValue.count * 2)
            }
            for field in newValue {
                var name = field.name, value = field.value
                name.withUTF8 { name in value.withUTF8 { store.append(name: UnsafeRawBufferPointer(name), value: UnsafeRawBufferPointer($0)) } }
            }
        }
    }

    /// How many regular fields there are.
    public var fieldCount: Int { store.endCount / 2 }

    /// How many bytes their names and values have, together.
    public var fieldByteCount: Int { store.byteCount }

    /// Calls `body` with the regular fields' bytes and where each name and value ends in them
    /// (two entries a field), valid during the call: the codec hands them to nghttp2 in place.
    func withFieldStorage<R, E: Error>(_ body: (UnsafeBufferPointer<UInt8>, UnsafeBufferPointer<Int>) throws(E) -> R) throws(E) -> R {
        try withExtendedLifetime(store) { (store) throws(E) -> R in try body(store.bytes, store.ends) }
    }

    /// Calls `body` with each regular field's name and value bytes, in order (valid during the
    /// call).
    public func forEachField(_ body: (UnsafeRawBufferPointer, UnsafeRawBufferPointer) throws -> Void) rethrows {
        try withExtendedLifetime(store) { store in try Self.forEachField(bytes: store.bytes, ends: store.ends, body) }
    }

    /// ``forEachField(_:)`` over a head's field storage as ``withFieldStorage(_:)`` lends it.
    @inline(__always)
    static func forEachField(bytes: UnsafeBufferPointer<UInt8>, ends: UnsafeBufferPointer<Int>,
                             _ body: (UnsafeRawBufferPointer, UnsafeRawBufferPointer) throws -> Void) rethrows {
        let bytes = UnsafeRawBufferPointer(bytes)
        var start = 0
        var index = 0
        while index < ends.count {
            let nameEnd = ends[index], valueEnd = ends[index + 1]
            try body(UnsafeRawBufferPointer(rebasing: bytes[start..<nameEnd]),
                     UnsafeRawBufferPointer(rebasing: bytes[nameEnd..<valueEnd]))
            start = valueEnd
            index += 2
        }
    }

    /// The value of the first regular field named `name` (a lowercase name; compared ignoring
    /// ASCII case), or nil.
    public func firstField(_ name: StaticString) -> String? {
        withFirstField(name) { String(decoding: $0, as: UTF8.self) }
    }

    /// Whether a regular field is named `name` (a lowercase name; compared ignoring ASCII case).
    public func hasField(_ name: StaticString) -> Bool { withExtendedLifetime(store) { firstValue(named: name, in: $0) != nil } }

    /// `body` called with the value bytes of the first regular field named `name` (a lowercase
    /// name; compared ignoring ASCII case), valid during the call; nil when there is none. A
    /// look at a value without making a String of it (one over 15 bytes is an allocation).
    public func withFirstField<R>(_ name: StaticString, _ body: (UnsafeRawBufferPointer) -> R) -> R? {
        withExtendedLifetime(store) { store in
            guard let (start, end) = firstValue(named: name, in: store) else { return nil }
            return body(UnsafeRawBufferPointer(rebasing: UnsafeRawBufferPointer(store.bytes)[start..<end]))
        }
    }

    /// Where the value of the first field named `name` is in `store`'s bytes; stops at it.
    private func firstValue(named name: StaticString, in store: HTTP2FieldStore) -> (start: Int, end: Int)? {
        let bytes = UnsafeRawBufferPointer(store.bytes), ends = store.ends
        var start = 0
        var index = 0
        while index < ends.count {
            let nameEnd = ends[index], valueEnd = ends[index + 1]
            if HTTP2Codec.equalsIgnoringCase(UnsafeRawBufferPointer(rebasing: bytes[start..<nameEnd]), name) {
                return (nameEnd, valueEnd)
            }
            start = valueEnd
            index += 2
        }
        return nil
    }

    /// A request head.
    public init(method: String, scheme: String?, authority: String?, path: String?, fields: HTTPFields = HTTPFields()) {
        self.method = method
        self.scheme = scheme
        self.authority = authority
        self.path = path
        self.fields = fields
    }

    /// A request head whose regular fields `write` writes in one pass into storage made once:
    /// at most `fields` fields of `bytes` bytes together, names and values (a head to send,
    /// built from bytes the caller holds: no `Array.append` per name and value, each ~70
    /// instructions). Writing more than that stops the process (a bound is a bug, not input).
    public init(method: String, scheme: String?, authority: String?, path: String?, fields: Int, bytes: Int,
                write: (inout FieldWriter) -> Void) {
        self.method = method
        self.scheme = scheme
        self.authority = authority
        self.path = path
        store = HTTP2FieldStore(bytes: bytes, ends: fields * 2)
        Self.fill(store, write)
    }

    /// Fills `store` (empty, with room for what `write` writes) with the fields `write` writes.
    @inline(__always)
    static func fill(_ store: HTTP2FieldStore, _ write: (inout FieldWriter) -> Void) {
        store.fill { byteBuffer, endBuffer in
            var writer = FieldWriter(bytes: byteBuffer, ends: endBuffer)
            write(&writer)
            return (writer.endCount == 0 ? 0 : endBuffer[writer.endCount - 1], writer.endCount)
        }
    }

    /// Writes a head's regular fields into storage sized for them beforehand
    /// (``init(method:scheme:authority:path:fields:bytes:write:)``).
    public struct FieldWriter: HTTP2FieldSink {
        /// Where the names and values go, back to back.
        let bytes: UnsafeMutableRawBufferPointer
        /// Where each name and value ends in ``bytes``.
        let ends: UnsafeMutableBufferPointer<Int>
        /// How many entries of ``ends`` are written (two a field).
        private(set) var endCount = 0
        /// How many bytes are written.
        private var position = 0

        init(bytes: UnsafeMutableRawBufferPointer, ends: UnsafeMutableBufferPointer<Int>) {
            self.bytes = bytes
            self.ends = ends
        }

        /// Appends a field, copied (its name as it is: the codec lowercases names as it sends them).
        public mutating func add(name: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer) {
            precondition(endCount + 2 <= ends.count && position + name.count + value.count <= bytes.count,
                         "an HTTP/2 head outgrew the size it was made with")
            put(name)
            ends[endCount] = position
            put(value)
            ends[endCount + 1] = position
            endCount += 2
        }

        /// Appends a field (copied, as every field here is).
        public mutating func addCopy(name: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer) {
            add(name: name, value: value)
        }

        private mutating func put(_ source: UnsafeRawBufferPointer) {
            guard let from = source.baseAddress, !source.isEmpty, let to = bytes.baseAddress else { return }
            (to + position).copyMemory(from: from, byteCount: source.count)
            position += source.count
        }
    }

    /// Whether two heads have the same pseudo-header fields and the same regular fields, in order.
    public static func == (a: HTTP2Head, b: HTTP2Head) -> Bool {
        guard a.method == b.method, a.scheme == b.scheme, a.authority == b.authority, a.path == b.path,
              a.extendedProtocol == b.extendedProtocol, a.status == b.status else { return false }
        return a.store.holdsSameFields(as: b.store)
    }

    /// Gives it storage of its own for its fields (a copy kept while the head it was copied
    /// from goes back to be reused: shared storage would be copied at its next change).
    mutating func detachFields() {
        store = store.copy(adding: 0, ends: 0)
    }

    /// A response head.
    public init(status: Int, fields: HTTPFields = HTTPFields()) {
        self.status = status
        self.fields = fields
    }

    /// An empty head: filled field by field as a header block is decoded, or a spare with no
    /// storage to give.
    public init() {}

    /// Whether it is small enough to keep for another head: 1 KiB of names and values, 36
    /// fields (a browser's request; what an array reserved for 256 bytes and 16 fields grows
    /// to, once, is within it), a `:path` and `:authority` of 2 KiB together. A codec keeps at
    /// most 16 (about 60 KiB), two once its connection is idle a while.
    var isSmall: Bool {
        store.byteCapacity <= 1100 && store.endCapacity <= 72
            && (path?.utf8.count ?? 0) + (authority?.utf8.count ?? 0) <= 2048
    }

    /// The head, moved out: an empty head is left in its place (no copy of its storage).
    public mutating func take() -> HTTP2Head {
        var taken = HTTP2Head()
        swap(&taken, &self)
        return taken
    }

    /// Makes it a spare: empty, keeping only its fields' storage, and that only if it is small
    /// (``isSmall``: a spare may be kept a long while).
    public mutating func makeSpare() {
        clear()
        if !isSmall { store = HTTP2FieldStore.empty }
    }

    /// Empties it, keeping its fields' storage (for the next block the codec decodes).
    mutating func clear() {
        // Each only if set: storing nil releases the old value whatever it was, a call each (a
        // response head has none of the five, and three heads are emptied for a gRPC call).
        if method != nil { method = nil }
        if scheme != nil { scheme = nil }
        if authority != nil { authority = nil }
        if path != nil { path = nil }
        if extendedProtocol != nil { extendedProtocol = nil }
        status = nil
        clearFields()
    }

    /// Empties its regular fields, keeping their storage when it is this head's alone (emptying
    /// storage a copy shares would copy it).
    private mutating func clearFields() {
        if isKnownUniquelyReferenced(&store) {
            store.removeAll()
        } else {
            store = HTTP2FieldStore.empty
        }
    }

    /// Records one decoded field line (its bytes as nghttp2 hands them over); pseudo-header
    /// fields go to their properties.
    ///
    /// `recent` holds the connection's previous `:authority` and `:path`: the same bytes again
    /// (an app's streams name one host, a gRPC app calls one method again and again) take that
    /// String rather than decoding a new one (a path over 15 bytes is an allocation); other
    /// bytes replace it (or clear it, when longer than ``keptValueLimit``: it is kept as long as
    /// the connection).
    mutating func add(name: UnsafeBufferPointer<UInt8>, value: UnsafeBufferPointer<UInt8>, recent: inout RecentValues) {
        guard name.first == UInt8(ascii: ":") else {
            // (A new head's store grows to a usual request's room at once: 256 bytes, 8 fields.)
            let size = name.count + value.count
            if !isKnownUniquelyReferenced(&store) {
                store = store.copy(adding: size, ends: 2)
            } else if !store.fits(bytes: size, ends: 2) {
                store.grow(bytes: size, ends: 2)
            }
            store.append(name: UnsafeRawBufferPointer(name), value: UnsafeRawBufferPointer(value))
            return
        }
        if Self.equals(name, ":method") {
            method = RequestHeadParser.method(UnsafeRawBufferPointer(value), 0..<value.count)
        } else if Self.equals(name, ":path") {
            path = Self.string(value, reusing: &recent.path)
        } else if Self.equals(name, ":scheme") {
            scheme = Self.equals(value, "https") ? "https" : Self.equals(value, "http") ? "http"
                : String(decoding: value, as: UTF8.self)
        } else if Self.equals(name, ":authority") {
            authority = Self.string(value, reusing: &recent.authority)
        } else if Self.equals(name, ":status") {
            // Three digits (nghttp2 refuses any other `:status`), read without a String.
            status = value.count == 3 && value.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 })
                ? Int(value[0] &- 0x30) * 100 + Int(value[1] &- 0x30) * 10 + Int(value[2] &- 0x30) : nil
        } else if Self.equals(name, ":protocol") {
            extendedProtocol = String(decoding: value, as: UTF8.self)
        }
        // (nghttp2 refuses unknown pseudo-header fields before they get here.)
    }

    /// The longest `:authority` or `:path` kept for the next head to compare with (a host name
    /// is at most 253 bytes, a port 6 more; a path may be 64 KiB, and is kept only if short).
    static let keptValueLimit = 260

    /// A received connection's last `:authority` and `:path` (``add(name:value:recent:)``).
    struct RecentValues {
        /// The last `:authority`, if short.
        var authority: String?
        /// The last `:path`, if short.
        var path: String?
    }

    /// `value` as a String: `last` when it has the same bytes, else a new one, which becomes
    /// `last` if short (``keptValueLimit``).
    @inline(__always)
    private static func string(_ value: UnsafeBufferPointer<UInt8>, reusing last: inout String?) -> String {
        if let kept = last, kept.withUTF8InPlace({ equals($0, value) }) { return kept }
        let decoded = String(decoding: value, as: UTF8.self)
        last = value.count <= keptValueLimit ? decoded : nil
        return decoded
    }

    @inline(__always)
    private static func equals(_ a: UnsafeBufferPointer<UInt8>, _ b: UnsafeBufferPointer<UInt8>) -> Bool {
        guard a.count == b.count else { return false }
        guard let x = a.baseAddress, let y = b.baseAddress else { return true }
        return memcmp(x, y, a.count) == 0
    }

    @inline(__always)
    private static func equals(_ bytes: UnsafeBufferPointer<UInt8>, _ literal: StaticString) -> Bool {
        bytes.count == literal.utf8CodeUnitCount
            && memcmp(bytes.baseAddress!, literal.utf8Start, bytes.count) == 0
    }
}
