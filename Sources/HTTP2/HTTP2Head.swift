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

    /// Records one decoded field line; pseudo-header fields go to their properties.
    mutating func add(name: String, value: String) {
        guard name.utf8.first == UInt8(ascii: ":") else {
            fields.append(HTTPField(name: name, value: value))
            return
        }
        switch name {
        case ":method": method = value
        case ":scheme": scheme = value
        case ":authority": authority = value
        case ":path": path = value
        case ":protocol": extendedProtocol = value
        case ":status": status = Int(value)
        default: break  // nghttp2 refuses unknown pseudo-header fields before they get here
        }
    }
}
