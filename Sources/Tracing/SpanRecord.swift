/// A finished span, ready to export: the OTLP `Span` message's fields.
public struct SpanRecord: Sendable {
    /// The span's trace, id and sampled flag.
    public var context: SpanContext
    /// The trace's vendor `tracestate` (W3C), as the app sent it; nil: none.
    public var traceState: String?
    /// The parent span's id (nil: a root span).
    public var parentSpanID: SpanID?
    /// Whether the parent is in another process (the app's span).
    public var parentIsRemote: Bool
    /// The span name (`GET`, `token fetch`).
    public var name: String
    /// Server, client or internal.
    public var kind: SpanKind
    /// Start, nanoseconds since 1970.
    public var startNanos: UInt64
    /// End, nanoseconds since 1970.
    public var endNanos: UInt64
    /// The attributes, in the order set.
    public var attributes: [SpanAttribute]
    /// Timed events (a replay and why).
    public var events: [SpanEvent]
    /// Links to spans of other traces (the token fetch a request waited for).
    public var links: [SpanLink]
    /// Unset, or error with a short message.
    public var status: SpanStatus

    /// A span record.
    public init(context: SpanContext, traceState: String? = nil, parentSpanID: SpanID?, parentIsRemote: Bool = false, name: String,
                kind: SpanKind, startNanos: UInt64, endNanos: UInt64, attributes: [SpanAttribute] = [], events: [SpanEvent] = [],
                links: [SpanLink] = [], status: SpanStatus = .unset) {
        self.context = context
        self.traceState = traceState
        self.parentSpanID = parentSpanID
        self.parentIsRemote = parentIsRemote
        self.name = name
        self.kind = kind
        self.startNanos = startNanos
        self.endNanos = endNanos
        self.attributes = attributes
        self.events = events
        self.links = links
        self.status = status
    }
}

/// The OTLP span kinds the sidecar emits.
public enum SpanKind: Int, Sendable {
    /// Work inside the process.
    case `internal` = 1
    /// The request the app made to the sidecar.
    case server = 2
    /// A request the sidecar made (to an upstream, to a token server).
    case client = 3
}

/// A span's status: OTLP's `STATUS_CODE_UNSET` or `STATUS_CODE_ERROR` with a description.
public enum SpanStatus: Sendable, Equatable {
    /// Nothing to report (HTTP semantic conventions leave a success unset).
    case unset
    /// It failed, and why (never a secret).
    case error(String)
}

/// An attribute value: OTLP `AnyValue` (string, bool, int, double).
public enum AttributeValue: Sendable, Equatable {
    /// A string.
    case string(String)
    /// A boolean.
    case bool(Bool)
    /// A 64-bit integer.
    case int(Int64)
    /// A double.
    case double(Double)
}

/// One key and value.
public struct SpanAttribute: Sendable, Equatable {
    /// The key, such as `http.request.method`.
    public var key: String
    /// The value.
    public var value: AttributeValue

    /// An attribute.
    public init(_ key: String, _ value: AttributeValue) {
        self.key = key
        self.value = value
    }
}

/// A timed event in a span.
public struct SpanEvent: Sendable, Equatable {
    /// Nanoseconds since 1970.
    public var timeNanos: UInt64
    /// The event's name.
    public var name: String
    /// Its attributes.
    public var attributes: [SpanAttribute]

    /// An event.
    public init(timeNanos: UInt64, name: String, attributes: [SpanAttribute] = []) {
        self.timeNanos = timeNanos
        self.name = name
        self.attributes = attributes
    }
}

/// A link to a span in another trace.
public struct SpanLink: Sendable, Equatable {
    /// The linked span.
    public var context: SpanContext
    /// Why it is linked.
    public var attributes: [SpanAttribute]

    /// A link.
    public init(context: SpanContext, attributes: [SpanAttribute] = []) {
        self.context = context
        self.attributes = attributes
    }
}
