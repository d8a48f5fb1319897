import HTTP1

/// A complete request answered by the sidecar itself rather than forwarded (the admin endpoints,
/// the demo issuer and backend): its head and its whole body, as a local responder sees it.
public struct LocalRequest: Sendable {
    /// The method, case preserved.
    public var method: String
    /// The path as sent (not percent-decoded), without the query; `*` for `OPTIONS *`.
    public var path: String
    /// The query string's items, form-decoded, in order.
    public var query: [QueryItem]
    /// The header fields, in order.
    public var fields: HTTPFields
    /// The body (de-chunked), at most the server's body limit.
    public var body: [UInt8]

    /// Creates a request (for handlers tested without sockets).
    public init(method: String, path: String, query: [QueryItem] = [], fields: HTTPFields = HTTPFields(), body: [UInt8] = []) {
        self.method = method
        self.path = path
        self.query = query
        self.fields = fields
        self.body = body
    }

    /// Builds a request from a parsed head: splits the target into path and query.
    public init(head: borrowing RequestHead, body: [UInt8]) {
        let target = head.target.originFormString
        if let mark = target.firstIndex(of: "?") {
            path = String(target[..<mark])
            query = FormDecoding.items(target[target.index(after: mark)...])
        } else {
            path = target
            query = []
        }
        method = head.method
        fields = head.fields
        self.body = body
    }
}
