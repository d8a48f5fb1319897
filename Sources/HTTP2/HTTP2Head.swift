import Glibc
import HTTP1

/// The head of an HTTP/2 message: its pseudo-header fields apart, its regular fields in order.
///
/// A request has `method`, `scheme`, `authority` and `path` (a `CONNECT` only `method` and
/// `authority`, RFC 9113 §8.5); a response has `status`. Field names are lowercase on the wire
/// (RFC 9113 §8.2.1): received ones already are (the codec refuses others), and the codec
/// lowercases the names of fields it sends.
public struct HTTP2Head: Equatable, Sendable {
    /// `:method`.
    public var method: String?
    /// `:scheme`.
    public var scheme: String?
    /// `:authority`.
    public var authority: String?
    /// `:path`.
    public var path: String?
    /// `:protocol` (RFC 8441's extended CONNECT).
    public var extendedProtocol: String?
    /// `:status`, as a number.
    public var status: Int?
    /// The regular fields, in the order received or to be sent.
    public var fields: HTTPFields

    /// A request head.
    public init(method: String, scheme: String?, authority: String?, path: String?, fields: HTTPFields = HTTPFields()) {
        self.method = method
        self.scheme = scheme
        self.authority = authority
        self.path = path
        self.fields = fields
    }

    /// A response head.
    public init(status: Int, fields: HTTPFields = HTTPFields()) {
        self.status = status
        self.fields = fields
    }

    /// An empty head, filled field by field as a header block is decoded.
    init() {
        fields = HTTPFields()
    }

    /// A trailer section: regular fields only.
    init(trailers: HTTPFields) {
        fields = trailers
    }

    /// Records one decoded field line (its bytes as nghttp2 hands them over); pseudo-header
    /// fields go to their properties.
    mutating func add(name: UnsafeBufferPointer<UInt8>, value: UnsafeBufferPointer<UInt8>) {
        let valueText = String(decoding: value, as: UTF8.self)
        guard name.first == UInt8(ascii: ":") else {
            fields.append(HTTPField(name: String(decoding: name, as: UTF8.self), value: valueText))
            return
        }
        if Self.equals(name, ":method") {
            method = valueText
        } else if Self.equals(name, ":path") {
            path = valueText
        } else if Self.equals(name, ":scheme") {
            scheme = valueText
        } else if Self.equals(name, ":authority") {
            authority = valueText
        } else if Self.equals(name, ":status") {
            status = Int(valueText)
        } else if Self.equals(name, ":protocol") {
            extendedProtocol = valueText
        }
        // (nghttp2 refuses unknown pseudo-header fields before they get here.)
    }

    @inline(__always)
    private static func equals(_ bytes: UnsafeBufferPointer<UInt8>, _ literal: StaticString) -> Bool {
        bytes.count == literal.utf8CodeUnitCount
            && memcmp(bytes.baseAddress!, literal.utf8Start, bytes.count) == 0
    }
}
