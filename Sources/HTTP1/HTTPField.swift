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
}
