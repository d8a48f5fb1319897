/// One `name=value` pair of a query string or a form body, percent-decoded.
public struct QueryItem: Sendable, Equatable, Hashable {
    /// The decoded name.
    public var name: String
    /// The decoded value (empty when the pair had no `=`).
    public var value: String

    /// Creates a pair.
    public init(name: String, value: String) {
        self.name = name
        self.value = value
    }
}

extension Array where Element == QueryItem {
    /// The value of the first item named `name` (exact match), or nil.
    public func first(_ name: String) -> String? {
        first { $0.name == name }?.value
    }
}
