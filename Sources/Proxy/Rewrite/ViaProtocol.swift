import HTTP1

/// The protocol a forwarded message came to the sidecar in, as its `Via` entry names it
/// (RFC 9110 §7.6.3: `received-protocol`, the version of the message as received): a request
/// from an HTTP/2 app says `2`, a response from an HTTP/1.0 backend `1.0`.
enum ViaProtocol: Sendable, Equatable {
    /// HTTP/1.0.
    case http1_0
    /// HTTP/1.1.
    case http1_1
    /// HTTP/2.
    case http2

    /// The protocol of a message received as `version` (an HTTP/1.x one), or over HTTP/2.
    @inline(__always)
    init(_ version: HTTPVersion, http2: Bool) {
        self = http2 ? .http2 : version == .http1_0 ? .http1_0 : .http1_1
    }

    /// The entry the sidecar adds: `<version> token-sidecar`.
    var value: StaticString {
        switch self {
        case .http1_0: "1.0 token-sidecar"
        case .http1_1: "1.1 token-sidecar"
        case .http2: "2 token-sidecar"
        }
    }

    /// The entry as an HTTP/1.1 field line, CRLF-terminated.
    var line: StaticString {
        switch self {
        case .http1_0: "Via: 1.0 token-sidecar\r\n"
        case .http1_1: "Via: 1.1 token-sidecar\r\n"
        case .http2: "Via: 2 token-sidecar\r\n"
        }
    }

    /// Appends ``line`` to `bytes`, each case's bytes a constant of known size (a copy of the
    /// selected one was a `memcpy` call).
    @inline(__always)
    func appendLine(to bytes: inout [UInt8]) {
        switch self {
        case .http1_0: bytes.append(ViaProtocol.http1_0.line)
        case .http1_1: bytes.append(ViaProtocol.http1_1.line)
        case .http2: bytes.append(ViaProtocol.http2.line)
        }
    }

    /// Writes ``line`` with `writer`, as ``appendLine(to:)`` does.
    @inline(__always)
    func writeLine(_ writer: inout HeadWriter) {
        switch self {
        case .http1_0: writer.write(ViaProtocol.http1_0.line)
        case .http1_1: writer.write(ViaProtocol.http1_1.line)
        case .http2: writer.write(ViaProtocol.http2.line)
        }
    }

    /// The longest ``line`` (a bound for a head's size).
    static let longestLine = 24
    /// The longest ``value``: the line less `Via: ` and its CRLF.
    static let longestValue = longestLine - 7
}
