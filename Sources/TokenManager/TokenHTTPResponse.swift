import HTTP1

/// A complete response from a token endpoint: status, header fields and the (de-chunked) body.
///
/// The body may hold a token: ``description`` shows only the status and body length.
public struct TokenHTTPResponse: Sendable, Equatable, CustomStringConvertible, CustomDebugStringConvertible {
    /// The status code.
    public var status: Int
    /// The header fields, in order.
    public var fields: HTTPFields
    /// The body bytes (chunked framing already removed).
    public var body: [UInt8]

    /// Memberwise initializer.
    public init(status: Int, fields: HTTPFields = HTTPFields(), body: [UInt8] = []) {
        self.status = status
        self.fields = fields
        self.body = body
    }

    /// `HTTP 200 (123 body bytes)` — never the body.
    public var description: String { "HTTP \(status) (\(body.count) body bytes)" }

    /// Same as ``description``.
    public var debugDescription: String { description }
}
