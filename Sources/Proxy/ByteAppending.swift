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

    /// Appends the bytes of a literal (a ``HeadBytes`` constant).
    @inline(__always)
    mutating func append(_ literal: StaticString) {
        append(contentsOf: UnsafeBufferPointer(start: literal.utf8Start, count: literal.utf8CodeUnitCount))
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

/// Byte constants of the heads the proxy writes: literals (an array held in a global was
/// initialized through `swift_once` and retained at each use, a few times per request).
enum HeadBytes {
    static var crlf: StaticString { "\r\n" }
    static var http11Space: StaticString { "HTTP/1.1 " }
    static var spaceHTTP11Host: StaticString { " HTTP/1.1\r\nHost: " }
    static var chunkedLine: StaticString { "Transfer-Encoding: chunked\r\n" }
    /// The start of the `Upgrade` line of a request that switches protocols.
    static var upgradePrefix: StaticString { "Upgrade: " }
    /// The Connection line of a request that asks to upgrade (after its `Upgrade` line).
    static var connectionUpgrade: StaticString { "Connection: upgrade\r\n" }
    static var contentLengthPrefix: StaticString { "Content-Length: " }
    static var dpopPrefix: StaticString { "DPoP: " }
    static var traceParentPrefix: StaticString { "traceparent: " }
    static var connectionClose: StaticString { "Connection: close\r\n" }
    static var connectionKeepAlive: StaticString { "Connection: keep-alive\r\n" }
    /// The `Via` line the proxy adds to every head it forwards.
    static var viaLine: StaticString { "Via: 1.1 token-sidecar\r\n" }
}
