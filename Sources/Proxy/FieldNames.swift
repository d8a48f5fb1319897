import HTTP1

/// ASCII case-insensitive field-name helpers used when rewriting heads.
enum FieldNames {
    /// Whether a field describes one connection and is never forwarded as it is (RFC 9110
    /// §7.6.1), or is `Transfer-Encoding`, which the proxy re-frames itself. Dispatches on the
    /// name's length, so most fields are rejected without looking at a byte.
    static func isHopByHop(_ field: HTTPField) -> Bool {
        switch field.name.utf8.count {
        case 2: return field.nameEquals("te")
        case 7: return field.nameEquals("trailer") || field.nameEquals("upgrade")
        case 10: return field.nameEquals("connection") || field.nameEquals("keep-alive")
        case 16: return field.nameEquals("proxy-connection")
        case 17: return field.nameEquals("transfer-encoding")
        case 18: return field.nameEquals("proxy-authenticate")
        case 19: return field.nameEquals("proxy-authorization")
        default: return false
        }
    }

    /// ``isHopByHop(_:)`` for a line of a parsed head, compared on its bytes.
    static func isHopByHop(_ line: FieldLine, in view: ResponseHeadView) -> Bool {
        switch line.name.count {
        case 2: return view.name(of: line, equals: "te")
        case 7: return view.name(of: line, equals: "trailer") || view.name(of: line, equals: "upgrade")
        case 10: return view.name(of: line, equals: "connection") || view.name(of: line, equals: "keep-alive")
        case 16: return view.name(of: line, equals: "proxy-connection")
        case 17: return view.name(of: line, equals: "transfer-encoding")
        case 18: return view.name(of: line, equals: "proxy-authenticate")
        case 19: return view.name(of: line, equals: "proxy-authorization")
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
        let needle = Array("token-sidecar".utf8)
        for field in fields where field.nameEquals("via") {
            let bytes = Array(field.value.utf8)
            guard bytes.count >= needle.count else { continue }
            for start in 0...(bytes.count - needle.count) where bytes[start] == needle[0] {
                if Array(bytes[start..<start + needle.count]) == needle { return true }
            }
        }
        return false
    }
}
