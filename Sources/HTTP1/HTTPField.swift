/// One field line (`name: value`) of a header or trailer section.
///
/// The name keeps the case it was received with (it is forwarded as is); comparisons made
/// through ``HTTPFields`` are ASCII-case-insensitive (RFC 9110 §5.1). The value has its
/// leading and trailing whitespace (OWS) removed (RFC 9110 §5.5).
public struct HTTPField: Sendable, Equatable, Hashable {
    /// The field name, as received.
    public var name: String
    /// The field value, without leading/trailing SP/HTAB.
    public var value: String

    /// Creates a field line. No validation happens here; the serializer writes it verbatim.
    public init(name: String, value: String) {
        self.name = name
        self.value = value
    }

    /// Whether the name equals `lowercase` ignoring ASCII case; `lowercase` is a lowercase
    /// field name (letters, digits, `-`). Compares lengths first, then 8 bytes at a time.
    @inline(__always)
    public func nameEquals(_ lowercase: StaticString) -> Bool {
        guard name.utf8.count == lowercase.utf8CodeUnitCount else { return false }
        // A native string's bytes are read in place (a copy of the String would be retained
        // and released: two calls per field and comparison).
        if let equal = name.utf8.withContiguousStorageIfAvailable({
            ASCII.equalsLowercase(UnsafeRawBufferPointer($0), 0..<$0.count, lowercase)
        }) {
            return equal
        }
        // Names were validated as tokens by the parser (or are the proxy's own), which is
        // what the case fold of equalsLowercase relies on.
        return name.withUTF8InPlace { ASCII.equalsLowercase(UnsafeRawBufferPointer($0), 0..<$0.count, lowercase) }
    }

    /// Whether the name equals `other` ignoring ASCII case (RFC 9110 §5.1).
    public func nameEquals(ignoringCase other: String) -> Bool {
        ASCII.equalsIgnoringCase(name, other)
    }
}
