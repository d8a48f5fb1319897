/// A parsed response head as offsets into the bytes it was parsed from: what
/// ``ResponseHeadParser/view(_:requestMethod:maxFields:)`` returns, with the same validation as a
/// ``ResponseHead`` but no String per field. Valid only while ``bytes`` is.
public struct ResponseHeadView {
    /// The head's bytes (the buffer it was parsed from).
    public let bytes: UnsafeRawBufferPointer
    /// The protocol version of the response.
    public let version: HTTPVersion
    /// The status code, 100...599.
    public let status: Int
    /// How the body is delimited (RFC 9112 §6.3).
    public let framing: BodyFraming
    /// Whether the connection may be reused; always false with `.untilClose` framing.
    public let keepAlive: Bool
    let reasonRange: Range<Int>
    let lines: [FieldLine]
    let known: KnownFields

    /// The reason phrase's bytes (may be empty).
    public var reason: UnsafeRawBufferPointer { UnsafeRawBufferPointer(rebasing: bytes[reasonRange]) }

    /// Where the reason phrase starts in ``bytes``.
    public var reasonStart: Int { reasonRange.lowerBound }

    /// Where the reason phrase ends in ``bytes``: the status line's CRLF follows.
    public var reasonEnd: Int { reasonRange.upperBound }

    /// The field lines, in order, as offsets into ``bytes``.
    public var fieldLines: [FieldLine] { lines }

    /// Whether the head has a Transfer-Encoding line.
    public var hasTransferEncoding: Bool { known.count(.transferEncoding) > 0 }

    /// The field section, read in place.
    public var section: FieldSectionView {
        FieldSectionView(bytes: bytes, lines: lines, connectionLines: known.count(.connection),
                         firstConnectionLine: known[.connection].firstIndex)
    }

    /// Whether `line`'s name equals `lowercase` ignoring ASCII case (`lowercase`: letters,
    /// digits, `-`).
    @inline(__always)
    public func name(of line: FieldLine, equals lowercase: StaticString) -> Bool {
        ASCII.equalsLowercase(bytes, line.name, lowercase)
    }

    /// The transfer codings, lowercased, in order, across all Transfer-Encoding lines.
    public func transferCodings() -> [String] {
        var codings: [String] = []
        guard hasTransferEncoding else { return codings }
        for line in lines where ASCII.equalsLowercase(bytes, line.name, "transfer-encoding") {
            ASCII.forEachListElement(bytes, line.value) { buf, range in
                codings.append(ASCII.lowercasedString(buf, range))
                return true
            }
        }
        return codings
    }

    /// The same head with Strings (``ResponseHead``).
    public func resolved() -> ResponseHead {
        ResponseHead(
            version: version, status: status,
            // The reason phrase is informational only; lossy decoding of obs-text is fine.
            reason: String(decoding: reason, as: UTF8.self),
            fields: HTTPFields(FieldSectionParser.fields(bytes, lines)),
            framing: framing, keepAlive: keepAlive)
    }
}
