/// One OpenTelemetry resource attribute attached to every exported span (`tracing.resourceAttributes`,
/// `OTEL_RESOURCE_ATTRIBUTES`), such as `deployment.environment=prod`.
public struct TracingAttribute: Sendable, Hashable {
    /// The attribute key, e.g. `k8s.pod.name`.
    public var key: String
    /// The attribute value (exported as a string).
    public var value: String

    /// Creates an attribute.
    public init(key: String, value: String) {
        self.key = key
        self.value = value
    }
}
