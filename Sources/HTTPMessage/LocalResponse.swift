import JSON
/// A complete response produced by a local responder (admin endpoints, demo servers).
///
/// The session adds `Content-Length` (and `Connection: close` when it closes the connection);
/// handlers must not set framing headers themselves (they are dropped if present).
public struct LocalResponse: Sendable {
    /// The status code (100...999; 1xx is not supported as a final response).
    public var status: Int
    /// Header fields in order. Names and values must not contain CR, LF or NUL: such
    /// fields are dropped rather than written (they would let a value forge headers).
    public var headers: [(String, String)]
    /// The body (omitted on the wire for HEAD requests and for 204/304).
    public var body: [UInt8]

    /// Creates a response.
    public init(status: Int, headers: [(String, String)] = [], body: [UInt8] = []) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    /// A JSON response (`application/json`).
    public static func json(status: Int = 200, _ object: JSONValue, headers: [(String, String)] = []) -> LocalResponse {
        LocalResponse(status: status, headers: [("Content-Type", "application/json")] + headers, body: object.serialized)
    }

    /// A plain-text response (`text/plain; charset=utf-8`).
    public static func text(status: Int = 200, _ string: String, headers: [(String, String)] = []) -> LocalResponse {
        LocalResponse(status: status, headers: [("Content-Type", "text/plain; charset=utf-8")] + headers,
                       body: Array(string.utf8))
    }

    /// A JSON error body `{"error": message}` with `status`.
    public static func error(status: Int, _ message: String, headers: [(String, String)] = []) -> LocalResponse {
        json(status: status, .object([("error", .string(message))]), headers: headers)
    }

    /// Whether the responder asked for the connection to close after this response
    /// (`Connection: close` among its headers).
    public var asksToClose: Bool {
        headers.contains { $0.0.lowercased() == "connection" && $0.1.lowercased().contains("close") }
    }

    /// The first value of header `name` (ASCII case-insensitive), or nil.
    public func header(_ name: String) -> String? {
        headers.first { $0.0.lowercased() == name.lowercased() }?.1
    }
}
