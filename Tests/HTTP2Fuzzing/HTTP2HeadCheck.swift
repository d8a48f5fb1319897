import HTTP1
import HTTP2

/// The differential fuzzer's property, for one input read as an HTTP/2 request head's fields
/// (what nghttp2 would deliver, made straight from the bytes: the frame fuzzer seldom gets a
/// whole header block past HPACK): ``HTTP2/HTTP2RequestHeadValidator`` and the old translation
/// read back by the HTTP/1.1 rules (``HTTP2RequestTranslator``, its oracle) agree on every head
/// — both refuse it, or both take it as the same request (``HTTP2RequestCheck/differences(_:endStream:headLimit:maxFields:)``).
///
/// The input: a byte of flags (the stream ended with the head; `:scheme` `https`, `http`, none
/// or another; `:authority` given or not), a byte for the head size limit and one for the field
/// limit, then NUL-separated parts: `:method`, `:path`, `:authority`, and names and values in
/// turn. What nghttp2 never delivers is taken out first — CR, LF (NUL separates), a `:` in a
/// name, uppercase in a name, whitespace around a value — so a difference is a real one.
public enum HTTP2HeadCheck {
    /// Runs the input; returns what it found wrong (empty: the two agree).
    public static func run(_ raw: [UInt8]) -> [String] {
        guard raw.count >= 3 else { return [] }
        let flags = raw[0]
        let headLimit = raw[1] & 0x80 != 0 ? Int(raw[1] & 0x7F) * 8 + 40 : 64 * 1024
        let maxFields = raw[2] & 0x80 != 0 ? Int(raw[2] & 0x0F) + 1 : 100
        let parts = raw.dropFirst(3).split(separator: 0, omittingEmptySubsequences: false).map { $0.filter { $0 != 0x0D && $0 != 0x0A } }
        func part(_ index: Int) -> [UInt8] { index < parts.count ? parts[index] : [] }
        let schemes: [String?] = ["https", "http", nil, "ftp"]
        var fields = HTTPFields()
        var index = 3
        while index < parts.count {
            let name = part(index).filter { $0 != 0x3A }.map { $0 >= 0x41 && $0 <= 0x5A ? $0 | 0x20 : $0 }
            let value = trimmed(part(index + 1))
            index += 2
            guard !name.isEmpty else { continue }
            fields.append(HTTPField(name: String(decoding: name, as: UTF8.self), value: String(decoding: value, as: UTF8.self)))
        }
        let head = HTTP2Head(method: String(decoding: part(0), as: UTF8.self), scheme: schemes[Int(flags >> 1 & 3)],
                             authority: flags & 8 != 0 ? String(decoding: part(2), as: UTF8.self) : nil,
                             path: String(decoding: part(1), as: UTF8.self), fields: fields)
        return HTTP2RequestCheck.differences(head, endStream: flags & 1 != 0, headLimit: headLimit, maxFields: maxFields)
    }

    /// `bytes` without SP and HTAB around them (nghttp2 refuses a value with either).
    private static func trimmed(_ bytes: [UInt8]) -> [UInt8] {
        guard let first = bytes.firstIndex(where: { $0 != 0x20 && $0 != 0x09 }),
              let last = bytes.lastIndex(where: { $0 != 0x20 && $0 != 0x09 }) else { return [] }
        return Array(bytes[first...last])
    }
}
