/// Encodes spans as an OTLP `ExportTraceServiceRequest` (opentelemetry-proto v1,
/// `collector/trace/v1/trace_service.proto`): one resource, one instrumentation scope.
/// The body of an OTLP/HTTP export with `Content-Type: application/x-protobuf`.
public struct OTLPTraceEncoder: Sendable {
    /// The resource's attributes (`service.name` first).
    public let resource: [SpanAttribute]
    /// The instrumentation scope's name.
    public let scopeName: String
    /// The instrumentation scope's version.
    public let scopeVersion: String

    /// An encoder for one process's spans.
    public init(resource: [SpanAttribute], scopeName: String = "token-sidecar", scopeVersion: String = "") {
        self.resource = resource
        self.scopeName = scopeName
        self.scopeVersion = scopeVersion
    }

    /// The request carrying `spans`.
    public func encode(_ spans: some Collection<SpanRecord>) -> [UInt8] {
        var writer = ProtobufWriter(capacity: 64 + spans.count * 512)
        // ExportTraceServiceRequest.resource_spans = 1
        writer.messageField(1) { resourceSpans in
            // ResourceSpans.resource = 1 (Resource.attributes = 1)
            resourceSpans.messageField(1) { resource in
                for attribute in self.resource { resource.messageField(1) { Self.write(attribute, to: &$0) } }
            }
            // ResourceSpans.scope_spans = 2
            resourceSpans.messageField(2) { scopeSpans in
                // ScopeSpans.scope = 1 (InstrumentationScope: name = 1, version = 2)
                scopeSpans.messageField(1) { scope in
                    scope.stringField(1, scopeName)
                    scope.stringField(2, scopeVersion)
                }
                for span in spans { scopeSpans.messageField(2) { Self.write(span, to: &$0) } }
            }
        }
        return writer.bytes
    }

    /// `Span` (trace/v1/trace.proto).
    private static func write(_ span: SpanRecord, to writer: inout ProtobufWriter) {
        writer.idField(1, span.context.traceID.high, span.context.traceID.low)
        writer.idField(2, span.context.spanID.value)
        writer.stringField(3, span.traceState ?? "")
        if let parent = span.parentSpanID { writer.idField(4, parent.value) }
        writer.stringField(5, span.name)
        writer.varintField(6, UInt64(span.kind.rawValue))
        writer.fixed64Field(7, span.startNanos)
        writer.fixed64Field(8, span.endNanos)
        for attribute in span.attributes { writer.messageField(9) { write(attribute, to: &$0) } }
        for event in span.events {
            writer.messageField(11) { message in
                message.fixed64Field(1, event.timeNanos)
                message.stringField(2, event.name)
                for attribute in event.attributes { message.messageField(3) { write(attribute, to: &$0) } }
            }
        }
        for link in span.links {
            writer.messageField(13) { message in
                message.idField(1, link.context.traceID.high, link.context.traceID.low)
                message.idField(2, link.context.spanID.value)
                for attribute in link.attributes { message.messageField(4) { write(attribute, to: &$0) } }
                message.fixed32Field(6, flags(link.context.flags, hasRemote: true, remote: link.context.isRemote))
            }
        }
        if case .error(let message) = span.status {
            // Status: message = 2, code = 3 (STATUS_CODE_ERROR = 2).
            writer.messageField(15) { status in
                status.stringField(2, message)
                status.varintField(3, 2)
            }
        }
        // Span.flags: the W3C flags, and whether the parent is remote (SpanFlags bits 8 and 9).
        writer.fixed32Field(16, flags(span.context.flags, hasRemote: span.parentSpanID != nil, remote: span.parentIsRemote))
    }

    private static func flags(_ traceFlags: UInt8, hasRemote: Bool, remote: Bool) -> UInt32 {
        UInt32(traceFlags) | (hasRemote ? 0x100 : 0) | (remote ? 0x200 : 0)
    }

    /// `KeyValue { key = 1; AnyValue value = 2 }`.
    private static func write(_ attribute: SpanAttribute, to writer: inout ProtobufWriter) {
        writer.stringField(1, attribute.key)
        writer.messageField(2) { value in
            switch attribute.value {
            case .string(let text): value.requiredStringField(1, text)
            case .bool(let flag): value.requiredVarintField(2, flag ? 1 : 0)
            case .int(let number): value.requiredVarintField(3, UInt64(bitPattern: number))
            case .double(let number): value.doubleField(4, number)
            }
        }
    }
}
