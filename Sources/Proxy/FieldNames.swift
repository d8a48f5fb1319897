import HTTP1

/// ASCII case-insensitive field-name helpers used when rewriting heads.
enum FieldNames {
    /// Whether a field describes one connection and is never forwarded as it is (RFC 9110
    /// §7.6.1), or is `Transfer-Encoding`, which the proxy re-frames itself.
    static func isHopByHop(_ field: HTTPField) -> Bool {
        isHopByHop(nameLength: field.name.utf8.count) { field.nameEquals($0) }
    }

    /// ``isHopByHop(_:)`` for a line of a parsed head, compared on its bytes.
    static func isHopByHop(_ line: FieldLine, in view: ResponseHeadView) -> Bool {
        isHopByHop(nameLength: line.name.count) { view.name(of: line, equals: $0) }
    }

    /// The one list of hop-by-hop names. Dispatches on the name's length, so most fields are
    /// rejected without looking at a byte; `named` compares the name with a lowercase literal.
    @inline(__always)
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

    /// Whether `field` is named by one of `lowercaseNames` (a Connection header's options).
    static func isNamed(_ field: HTTPField, in lowercaseNames: [String]) -> Bool {
        lowercaseNames.contains { field.nameEquals(ignoringCase: $0) }
    }

    /// Whether any `Via` field of `fields` names token-sidecar (a forwarding loop). A byte scan:
    /// `String.contains` goes through Foundation here and costs more than the whole request.
    static func viaMentionsSidecar(_ fields: HTTPFields) -> Bool {
        for index in fields.fields.indices where fields.fields[index].nameEquals("via") {
            let needle = Array("token-sidecar".utf8)  // only for a request that has a Via
            let bytes = Array(fields.fields[index].value.utf8)
            guard bytes.count >= needle.count else { continue }
            for start in 0...(bytes.count - needle.count) where bytes[start] == needle[0] {
                if Array(bytes[start..<start + needle.count]) == needle { return true }
            }
        }
        return false
    }
}
