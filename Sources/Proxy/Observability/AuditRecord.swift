import JSON

/// One audit record (`audit:`, issue 68): what a request did with a credential, or why the
/// route's policy refused it. Written as one JSON line, apart from the access log. Never a
/// secret: no token, no query string, no header value; the path is the normalized one the
/// rules were checked against (without its query).
public struct AuditRecord: Sendable, Equatable {
    /// What the route's policy decided.
    public enum Decision: String, Sendable, Equatable {
        /// A rule allowed it, or the route has no rules.
        case allowed
        /// Refused (nothing was forwarded).
        case denied
        /// The rules deny it, but the route only audits (`enforcement: audit`): forwarded.
        case audited
    }

    /// The route's label.
    public var route: String
    /// The credential's name, when the route has one.
    public var credential: String?
    /// Where the token went (`header:authorization`, `query:key`, `sigv4`…), when one was used.
    public var placement: String?
    /// The request method.
    public var method: String
    /// The destination (`host[:port]`).
    public var authority: String
    /// The normalized path (the path without its query on a route without rules).
    public var path: String
    /// The rule that allowed it, if one did.
    public var rule: String?
    /// The decision.
    public var decision: Decision
    /// Why it was refused or audited (`no_rule`, `ambiguous_path`), nil when allowed.
    public var reason: String?
    /// The status sent to the app.
    public var status: Int
    /// Request body bytes relayed.
    public var bytesIn: Int
    /// Response body bytes relayed.
    public var bytesOut: Int
    /// The trace id: the app's `traceparent` one when it sent one (or the sidecar's own trace when
    /// tracing is on), nil otherwise.
    public var traceID: String?
    /// `HTTP/1.1`, `HTTP/1.0` or `HTTP/2`.
    public var protocolName: String

    /// A record; the byte counts start at zero.
    public init(route: String, credential: String?, placement: String?, method: String, authority: String, path: String,
                rule: String?, decision: Decision, reason: String?, status: Int, bytesIn: Int = 0, bytesOut: Int = 0,
                traceID: String?, protocolName: String) {
        self.route = route
        self.credential = credential
        self.placement = placement
        self.method = method
        self.authority = authority
        self.path = path
        self.rule = rule
        self.decision = decision
        self.reason = reason
        self.status = status
        self.bytesIn = bytesIn
        self.bytesOut = bytesOut
        self.traceID = traceID
        self.protocolName = protocolName
    }

    /// The record as one JSON line (with `time`, now, first); absent values are null. Written
    /// straight into bytes, as access lines are: one per request.
    public func line() -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(384)
        out.append(contentsOf: Self.timeKey)
        UTCTimestamp.append(to: &out)
        out.append(0x22)
        Self.field("route", route, &out)
        Self.field("credential", credential, &out)
        Self.field("placement", placement, &out)
        Self.field("method", method, &out)
        Self.field("authority", authority, &out)
        Self.field("path", path, &out)
        Self.field("rule", rule, &out)
        Self.field("decision", decision.rawValue, &out)
        Self.field("reason", reason, &out)
        Self.field("status", status, &out)
        Self.field("bytes_in", bytesIn, &out)
        Self.field("bytes_out", bytesOut, &out)
        Self.field("trace_id", traceID, &out)
        Self.field("protocol", protocolName, &out)
        out.append(0x7d)
        out.append(0x0a)
        return out
    }

    private static let timeKey = Array(#"{"time":""#.utf8)
    private static let null: StaticString = "null"

    /// `,"key":` (the keys need no escaping).
    private static func key(_ key: StaticString, _ out: inout [UInt8]) {
        out.append(0x2c)
        out.append(0x22)
        out.append(contentsOf: UnsafeBufferPointer(start: key.utf8Start, count: key.utf8CodeUnitCount))
        out.append(0x22)
        out.append(0x3a)
    }

    private static func field(_ name: StaticString, _ value: String?, _ out: inout [UInt8]) {
        key(name, &out)
        if let value {
            JSONString.append(value, to: &out)
        } else {
            out.append(contentsOf: UnsafeBufferPointer(start: Self.null.utf8Start, count: Self.null.utf8CodeUnitCount))
        }
    }

    private static func field(_ name: StaticString, _ value: Int, _ out: inout [UInt8]) {
        key(name, &out)
        JSONNumber.append(value, to: &out)
    }
}
