import Glibc

/// An authority's bytes (a `Host` value's, or an absolute-form target's) and the authority
/// they parsed to: the streams of one HTTP/2 connection name the same host, and so do the
/// requests of one HTTP/1.1 connection, so a next head that names it with the same bytes takes
/// the authority as it is (``RequestHeadParser/head(method:target:fieldSection:maxFields:reusing:lastHost:)``,
/// ``RequestHeadParser/parsePrefix(_:maxFields:reusing:lastHost:)``) instead of checking and
/// lowercasing them again (about 350 instructions a stream). Made only by those parses, from
/// the bytes they parsed. A class: passed down to the parser's closure as one
/// reference (as a struct, its copies there cost most of what it saves).
public final class ParsedHost: Sendable {
    /// The authority's bytes (a `Host` value, or an absolute-form target's authority), as they were in the head.
    let bytes: [UInt8]
    /// What it parsed to.
    public let authority: Authority

    /// `buf[range]`, a `Host` value, and what ``Authority/parse(_:_:)`` made of it.
    init(_ buf: UnsafeRawBufferPointer, _ range: Range<Int>, parsedTo authority: Authority) {
        bytes = Array(buf[range])
        self.authority = authority
    }

    /// What `buf[range]` parses to as an authority (``Authority/parse(_:_:)``): `last`'s when
    /// it holds exactly these bytes, else parsed, and then remembered in `last`; nil (and
    /// `last` left as it was) when the bytes are not a valid authority.
    static func authority(_ buf: UnsafeRawBufferPointer, _ range: Range<Int>, remembering last: inout ParsedHost?) -> Authority? {
        if let last, last.matches(buf, range) { return last.authority }
        guard let parsed = Authority.parse(buf, range) else { return nil }
        last = ParsedHost(buf, range, parsedTo: parsed)
        return parsed
    }

    /// Whether `buf[range]` holds exactly these bytes.
    func matches(_ buf: UnsafeRawBufferPointer, _ range: Range<Int>) -> Bool {
        guard range.count == bytes.count, !bytes.isEmpty, let base = buf.baseAddress else { return false }
        return bytes.withUnsafeBytes { memcmp($0.baseAddress!, base + range.lowerBound, range.count) == 0 }
    }
}
