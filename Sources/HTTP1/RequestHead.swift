/// A parsed request line and header section. A class: an exchange passes its head around
/// (to the router, the rewriter, the access log) by one reference instead of copying a
/// dozen strings and arrays each time.
///
/// The field lines stay as offsets into a copy of the head's bytes (``withFieldSection(_:)``
/// reads them in place; a proxy copies kept lines as they arrived); ``fields`` makes Strings of
/// them for code off the proxy's path.
public final class RequestHead: Sendable {
    /// The method token, case preserved (methods are case-sensitive, RFC 9110 §9.1).
    public let method: String
    /// The request target.
    public let target: RequestTarget
    /// The protocol version.
    public let version: HTTPVersion
    /// `.none`, `.contentLength(n)` or `.chunked`; never `.untilClose` (RFC 9112 §6.3 item 7).
    public let framing: BodyFraming
    /// The parsed Host field; nil only for an HTTP/1.0 request without Host.
    public let host: Authority?
    /// Whether the connection may be reused after this exchange (RFC 9112 §9.3).
    public let keepAlive: Bool
    /// True when the request carries `Expect: 100-continue` (RFC 9110 §10.1.1).
    public let expectsContinue: Bool
    /// The bytes the field lines refer to (the whole head as received, or the lines of
    /// ``init(method:target:version:fields:framing:host:keepAlive:expectsContinue:)``); they end
    /// with the section's final CRLF.
    let fieldBytes: [UInt8]
    /// The field lines as offsets into ``fieldBytes``.
    let fieldLines: [FieldLine]
    /// How many of them are named Connection.
    let connectionLines: Int

    /// Memberwise initializer: `fields` are laid out as `name: value` lines.
    public convenience init(
        method: String, target: RequestTarget, version: HTTPVersion, fields: HTTPFields,
        framing: BodyFraming, host: Authority?, keepAlive: Bool, expectsContinue: Bool
    ) {
        var bytes: [UInt8] = []
        var lines: [FieldLine] = []
        var connectionLines = 0
        for field in fields {
            let nameStart = bytes.count
            bytes += field.name.utf8
            let nameEnd = bytes.count
            bytes += ": ".utf8
            let valueStart = bytes.count
            bytes += field.value.utf8
            lines.append(FieldLine(name: nameStart..<nameEnd, value: valueStart..<bytes.count))
            bytes += "\r\n".utf8
            if field.nameEquals("connection") { connectionLines += 1 }
        }
        bytes += "\r\n".utf8
        self.init(method: method, target: target, version: version, fieldBytes: bytes, fieldLines: lines,
                  connectionLines: connectionLines, framing: framing, host: host, keepAlive: keepAlive,
                  expectsContinue: expectsContinue)
    }

    /// A parsed head: its lines are offsets into `fieldBytes`.
    init(
        method: String, target: RequestTarget, version: HTTPVersion, fieldBytes: [UInt8], fieldLines: [FieldLine],
        connectionLines: Int, framing: BodyFraming, host: Authority?, keepAlive: Bool, expectsContinue: Bool
    ) {
        self.method = method
        self.target = target
        self.version = version
        self.fieldBytes = fieldBytes
        self.fieldLines = fieldLines
        self.connectionLines = connectionLines
        self.framing = framing
        self.host = host
        self.keepAlive = keepAlive
        self.expectsContinue = expectsContinue
    }

    /// All header field lines, in order, as Strings (made on each call: the proxy's path reads
    /// them in place with ``withFieldSection(_:)``).
    public var fields: HTTPFields {
        fieldBytes.withUnsafeBytes { HTTPFields(FieldSectionParser.fields($0, fieldLines)) }
    }

    /// Calls `body` with the field lines read in place.
    public func withFieldSection<Result>(_ body: (FieldSectionView) throws -> Result) rethrows -> Result {
        try fieldBytes.withUnsafeBytes {
            try body(FieldSectionView(bytes: $0, lines: fieldLines, connectionLines: connectionLines))
        }
    }
}
