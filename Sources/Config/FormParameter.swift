/// One extra form parameter sent with an `oauth2` token request (`params:`).
public struct FormParameter: Sendable, Hashable {
    /// The parameter name, as written.
    public var name: String
    /// The parameter value (not form-encoded yet).
    public var value: String

    /// Creates a parameter.
    public init(name: String, value: String) {
        self.name = name
        self.value = value
    }
}
