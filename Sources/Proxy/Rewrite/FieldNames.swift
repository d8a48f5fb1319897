import HTTP1
import HTTP2

/// ASCII case-insensitive field-name helpers used when rewriting heads.
enum FieldNames {
    /// Whether a line describes one connection and is never forwarded as it is (RFC 9110
    /// §7.6.1), or is `Transfer-Encoding`, which the proxy re-frames itself.
    // Once per field line of every head: a call cost as much as the test. (Transparent: with
    // `@inline(__always)` the HTTP/1.1 response copy's loop called it once a line again, +90
    // instructions a request, after a change elsewhere moved the optimizer's budget.)
    @_transparent
    static func isHopByHop(_ line: FieldLine, in section: FieldSectionView) -> Bool {
        isHopByHop(nameLength: line.name.count) { section.name(of: line, equals: $0) }
    }

    /// ``isHopByHop(_:in:)`` for a field name's bytes (an HTTP/2 head's).
    static func isHopByHop(name: UnsafeRawBufferPointer) -> Bool {
        isHopByHop(nameLength: name.count) { HTTP2Codec.equalsIgnoringCase(name, $0) }
    }

    /// The one list of hop-by-hop names. Dispatches on the name's length, so most fields are
    /// rejected without looking at a byte; `named` compares the name with a lowercase literal.
    @_transparent
    private static func isHopByHop(nameLength: Int, _ named: (StaticString) -> Bool) -> Bool {
        switch nameLength {
        case 2: return named("te")
        case 7: return named("trailer") || named("upgrade")
        case 10: return named("connection") || named("keep-alive")
        case 16: return named("proxy-connection")
        case 17: return named("transfer-encoding")
        case 18: return named("proxy-authenticate")
        case 19: return named("proxy-authorization")
        default: return false
        }
    }

    /// Whether any `Via` line of `section` names token-sidecar (a forwarding loop).
    static func viaMentionsSidecar(_ section: FieldSectionView) -> Bool {
        for line in section.lines where section.name(of: line, equals: "via") {
            if section.value(of: line).firstRange(of: "token-sidecar".utf8) != nil { return true }
        }
        return false
    }
}
