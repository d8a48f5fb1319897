import HTTP1

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
}
