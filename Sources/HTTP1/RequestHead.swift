/// A parsed request line and header section. A class: an exchange passes its head around
/// (to the router, the rewriter, the access log) by one reference instead of copying a
/// dozen strings and arrays each time.
///
/// The field lines stay as offsets into a copy of the head's bytes (``withFieldSection(_:)``
/// reads them in place; a proxy copies kept lines as they arrived); ``fields`` makes Strings of
/// them for code off the proxy's path.
///
/// A head that is done with can be handed back (``reclaimStorage(_:)``) and the next head is
/// parsed into the same object and arrays: a proxy allocates nothing per request head.
public final class RequestHead: @unchecked Sendable {
    // @unchecked: the properties are `var` only so that the parser can refill a head handed back
    // by ``reclaimStorage(_:)``, which hands back only a head no one else holds; a head is never
    // changed while anything can read it.
    /// The method token, case preserved (methods are case-sensitive, RFC 9110 §9.1).
    public internal(set) var method: String = ""
    /// The request target.
    public internal(set) var target: RequestTarget = .asterisk
    /// The protocol version.
    public internal(set) var version: HTTPVersion = .http1_1
    /// `.none`, `.contentLength(n)` or `.chunked`; never `.untilClose` (RFC 9112 §6.3 item 7).
    public internal(set) var framing: BodyFraming = .none
    /// The parsed Host field; nil only for an HTTP/1.0 request without Host.
    public internal(set) var host: Authority? = nil
    /// Whether the connection may be reused after this exchange (RFC 9112 §9.3).
    public internal(set) var keepAlive: Bool = false
    /// True when the request carries `Expect: 100-continue` (RFC 9110 §10.1.1).
    public internal(set) var expectsContinue: Bool = false
    /// The bytes the field lines refer to (the whole head as received, or the lines of
    /// ``init(method:target:version:fields:framing:host:keepAlive:expectsContinue:)``); they end
    /// with the section's final CRLF.
    var fieldBytes: [UInt8] = []
    /// The field lines as offsets into ``fieldBytes``.
    var fieldLines: [FieldLine] = []
    /// How many of them are named Connection.
    var connectionLines = 0

    /// Whether the head has a Connection line: without one it asks for no upgrade (a test that
    /// spares the common request a look at its fields).
    public var hasConnectionField: Bool { connectionLines > 0 }

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
        refill(method: method, target: target, version: version, fieldBytes: fieldBytes, fieldLines: fieldLines,
               connectionLines: connectionLines, framing: framing, host: host, keepAlive: keepAlive,
               expectsContinue: expectsContinue)
    }

    /// `head` handed back for the next head to be parsed into, when `head` is the only
    /// reference to it (nil otherwise: another owner may still read it). `head` must not be
    /// read afterwards.
    public static func reclaimStorage(_ head: inout RequestHead) -> RequestHeadStorage? {
        guard isKnownUniquelyReferenced(&head) else { return nil }
        return RequestHeadStorage(head: head)
    }

    /// Takes the values of a new head (the parser refilling a reclaimed one, or a new head).
    func refill(
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

/// A ``RequestHead`` that is done with, with its arrays, handed back
/// (``RequestHead/reclaimStorage(_:)``) for the parse of the next one
/// (``RequestHeadParser/parse(_:maxFields:reusing:)``), which refills it in place.
public struct RequestHeadStorage: @unchecked Sendable {
    // @unchecked: holds the only reference to its head (see ``RequestHead/reclaimStorage(_:)``).
    var head: RequestHead?

    /// No storage (the parse allocates).
    public init() {}

    init(head: RequestHead) { self.head = head }

    /// The bytes array of the head it holds, moved out (its capacity kept, its bytes to be
    /// overwritten): a field section written into it and passed with this storage to
    /// ``RequestHeadParser/head(method:target:fieldSection:maxFields:reusing:lastHost:)`` costs no
    /// allocation. Empty when it holds no head.
    public mutating func takeFieldBytes() -> [UInt8] {
        guard let head else { return [] }
        var bytes: [UInt8] = []
        swap(&bytes, &head.fieldBytes)
        return bytes
    }

    /// The line offsets array of the head it holds, moved out and emptied (its capacity kept),
    /// for a codec that writes the lines itself (``RequestHeadParser/head(method:target:fieldBytes:lines:maxFields:reusing:lastHost:)``).
    /// Empty when it holds no head.
    public mutating func takeFieldLines() -> [FieldLine] {
        guard let head else { return [] }
        var lines: [FieldLine] = []
        swap(&lines, &head.fieldLines)
        lines.removeAll(keepingCapacity: true)
        return lines
    }

    /// Bytes of memory the storage holds on to: its arrays, and an origin-form target's bytes
    /// (an HTTP/2 stream's `:path` is a String of its own, up to the head's 64 KiB).
    public var capacity: Int {
        guard let head else { return 0 }
        let target: Int
        if case .origin(let path) = head.target { target = path.utf8.count } else { target = 0 }
        return head.fieldBytes.capacity + head.fieldLines.capacity * MemoryLayout<FieldLine>.stride + target
    }
}
