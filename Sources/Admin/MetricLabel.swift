/// One `name="value"` label of a metric sample.
public struct MetricLabel: Sendable, Equatable, Hashable {
    /// The label name (`[a-zA-Z_][a-zA-Z0-9_]*`; other characters are rendered as `_`).
    public var name: String
    /// The label value (any text; escaped when rendered).
    public var value: String

    /// Creates a label.
    public init(_ name: String, _ value: String) {
        self.name = name
        self.value = value
    }
}
