/// Fast appends for building heads: `Array.append(contentsOf: string.utf8)` walks the string a
/// byte at a time (~200 instructions a call), while a contiguous UTF-8 buffer copies in one go.
extension Array where Element == UInt8 {
    /// Appends the UTF-8 bytes of `text`.
    @inline(__always)
    mutating func appendUTF8(_ text: String) {
        var text = text
        text.withUTF8 { append(contentsOf: $0) }
    }

    /// Appends `value` in decimal ASCII.
    mutating func appendDecimal(_ value: Int) {
        if value < 0 {
            append(0x2d)
            appendDecimal(-value)
            return
        }
        if value >= 10 { appendDecimal(value / 10) }
        append(UInt8(0x30 + value % 10))
    }

    /// Appends a `name: value\r\n` field line.
    @inline(__always)
    mutating func appendField(_ name: String, _ value: String) {
        appendUTF8(name)
        append(0x3a)
        append(0x20)
        appendUTF8(value)
        append(0x0d)
        append(0x0a)
    }
}

/// Byte constants of the heads the proxy writes.
enum HeadBytes {
    static let crlf: [UInt8] = [0x0d, 0x0a]
    static let http11Space: [UInt8] = Array("HTTP/1.1 ".utf8)
    static let spaceHTTP11Host: [UInt8] = Array(" HTTP/1.1\r\nHost: ".utf8)
    static let chunkedLine: [UInt8] = Array("Transfer-Encoding: chunked\r\n".utf8)
    static let contentLengthPrefix: [UInt8] = Array("Content-Length: ".utf8)
    static let dpopPrefix: [UInt8] = Array("DPoP: ".utf8)
    static let connectionClose: [UInt8] = Array("Connection: close\r\n".utf8)
    static let connectionKeepAlive: [UInt8] = Array("Connection: keep-alive\r\n".utf8)
}
