/// An ordered list of field lines (a header or trailer section).
///
/// Order and duplicates are preserved exactly as received, because a proxy must forward them
/// unchanged (RFC 9110 §5.3). Lookups compare names ASCII-case-insensitively (RFC 9110 §5.1).
public struct HTTPFields: Sendable, Equatable, Hashable, Sequence {
    /// The field lines, in order.
    public var fields: [HTTPField]

    /// Creates a section from field lines, kept in order.
    public init(_ fields: [HTTPField] = []) {
        self.fields = fields
    }

    /// Number of field lines (duplicates count separately).
    public var count: Int { fields.count }

    /// True when there are no field lines.
    public var isEmpty: Bool { fields.isEmpty }

    /// The field line at `index`.
    public subscript(index: Int) -> HTTPField {
        get { fields[index] }
        set { fields[index] = newValue }
    }

    /// Iterates the field lines in order.
    public func makeIterator() -> IndexingIterator<[HTTPField]> {
        fields.makeIterator()
    }

    /// The value of the first line named `name`, or nil.
    public func first(_ name: String) -> String? {
        // By index: a `for … in` copied each line (two retains and two releases a line).
        for index in fields.indices where ASCII.equalsIgnoringCase(fields[index].name, name) {
            return fields[index].value
        }
        return nil
    }

    /// The values of all lines named `name`, in order.
    public func values(_ name: String) -> [String] {
        var result: [String] = []
        for field in fields where ASCII.equalsIgnoringCase(field.name, name) {
            result.append(field.value)
        }
        return result
    }

    /// True if at least one line is named `name`.
    public func contains(_ name: String) -> Bool {
        fields.contains { ASCII.equalsIgnoringCase($0.name, name) }
    }

    /// Removes every line named `name`.
    public mutating func removeAll(_ name: String) {
        fields.removeAll { ASCII.equalsIgnoringCase($0.name, name) }
    }

    /// Removes every line for which `shouldBeRemoved` returns true.
    public mutating func removeAll(where shouldBeRemoved: (HTTPField) throws -> Bool) rethrows {
        try fields.removeAll(where: shouldBeRemoved)
    }

    /// Appends a line at the end (no validation).
    public mutating func append(_ name: String, _ value: String) {
        fields.append(HTTPField(name: name, value: value))
    }

    /// Appends a line at the end (no validation).
    public mutating func append(_ field: HTTPField) {
        fields.append(field)
    }

    /// The comma-separated list elements across all lines named `name`, OWS-trimmed,
    /// ASCII-lowercased, with empty elements dropped (RFC 9110 §5.6.1). Meant for token lists
    /// such as Connection, Transfer-Encoding and TE.
    public func tokens(_ name: String) -> [String] {
        var result: [String] = []
        for field in fields where ASCII.equalsIgnoringCase(field.name, name) {
            ASCII.forEachListElement(field.value) { buf, range in
                result.append(ASCII.lowercasedString(buf, range))
                return true
            }
        }
        return result
    }

    /// The connection options of the `Connection` lines other than `close` and `keep-alive`,
    /// lowercased: the names of further fields that belong to this hop only (RFC 9110 §7.6.1).
    /// (`keep-alive` names a field that is hop-by-hop anyway, `close` names none.) Empty —
    /// without allocating — for the usual `Connection: keep-alive` or no Connection field.
    public func connectionOptions() -> [String] {
        var result: [String] = []
        for index in fields.indices where fields[index].nameEquals("connection") {
            ASCII.forEachListElement(fields[index].value) { buf, range in
                if !ASCII.equalsLowercase(buf, range, "keep-alive") && !ASCII.equalsLowercase(buf, range, "close") {
                    result.append(ASCII.lowercasedString(buf, range))
                }
                return true
            }
        }
        return result
    }
}
