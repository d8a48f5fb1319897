/// One header field sent with every trace export request (`tracing.headers`,
/// `OTEL_EXPORTER_OTLP_HEADERS`). The value is a secret (often an API key): `description`,
/// `debugDescription` and reflection (`dump`) never show it.
public struct TracingHeader: Sendable, Equatable, CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    /// The field name, an HTTP token, as written.
    public var name: String
    /// The field value, without CR, LF or other control characters (but tab).
    public var value: String

    /// Creates a header field.
    public init(name: String, value: String) {
        self.name = name
        self.value = value
    }

    /// `"name: ****"` — never the value.
    public var description: String { "\(name): ****" }

    /// Same as `description`.
    public var debugDescription: String { description }

    /// The name only, so `dump` and test failure messages do not show the value.
    public var customMirror: Mirror { Mirror(self, children: ["name": name, "value": "****"]) }
}
