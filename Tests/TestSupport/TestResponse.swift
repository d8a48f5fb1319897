import Foundation

/// A response as ``RawClient`` read it off the wire.
public struct TestResponse: Sendable {
    /// The status code of the status line.
    public var status: Int
    /// The header fields in the order received, names as sent.
    public var headers: [(name: String, value: String)]
    /// The body, de-chunked when it came chunked (empty for HEAD, 1xx, 204 and 304).
    public var body: [UInt8]

    /// Creates a response from its parts.
    public init(status: Int, headers: [(name: String, value: String)], body: [UInt8]) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    /// The first value of the header field `name` (compared case-insensitively), or nil.
    public func header(_ name: String) -> String? {
        headers.first { $0.name.lowercased() == name.lowercased() }?.value
    }

    /// Every value of the header field `name` (compared case-insensitively), in order.
    public func headers(_ name: String) -> [String] {
        headers.filter { $0.name.lowercased() == name.lowercased() }.map(\.value)
    }

    /// The body decoded as UTF-8.
    public var text: String { String(decoding: body, as: UTF8.self) }

    /// The body parsed as a JSON object, or nil (not JSON, or another JSON value).
    public var json: [String: Any]? { jsonValue as? [String: Any] }

    /// The body parsed as any JSON value (an array or a fragment too, as Foundation types), or nil.
    public var jsonValue: Any? { try? JSONSerialization.jsonObject(with: Data(body), options: [.fragmentsAllowed]) }
}
