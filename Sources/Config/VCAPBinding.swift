/// The platform service binding a discovered value came from: the variable it was found in,
/// the service label (the key under which it is listed) and the instance name.
public struct VCAPBinding: Sendable, Equatable, CustomStringConvertible {
    /// `VCAP_SERVICES` or `USER_PROVIDED_VCAP_SERVICES`.
    public var variable: String
    /// The service label, e.g. `AdvancedMobileAccess`, `AppID`.
    public var label: String
    /// The instance's `name`, if it has one.
    public var name: String?

    /// Creates a binding description.
    public init(variable: String, label: String, name: String? = nil) {
        self.variable = variable
        self.label = label
        self.name = name
    }

    /// `VCAP_SERVICES binding "my-appid" (AppID)`.
    public var description: String {
        "\(variable) binding " + (name.map { "\"\($0)\" (\(label))" } ?? "(\(label))")
    }
}
