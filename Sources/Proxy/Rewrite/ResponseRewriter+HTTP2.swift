import HTTP1
import HTTP2
import TokenManager

/// A response head from an HTTP/2 upstream's stream, kept as the session keeps an HTTP/1.1
/// backend's (``UpstreamResponse``): built from the fields nghttp2 decoded, with no HTTP/1.1
/// text written and parsed back (RFC 9113's message rules were enforced by nghttp2 before
/// the head got here: lowercase names, no connection-specific field, a valid `content-length`).
extension ResponseRewriter {
    /// Why an HTTP/2 response head is refused (the exchange answers 502).
    enum HTTP2HeadProblem: Error, Equatable {
        /// No `:status`, or one outside 100–599, or 101 (HTTP/2 has no protocol switch).
        case status
        /// More fields than an HTTP/1.1 head may have (``maxFields``), or more bytes.
        case tooLarge
        /// A `content-length` that is not a number (nghttp2 checks it; kept as a guard).
        case contentLength
    }

    /// Most fields a response head may have, as for an HTTP/1.1 backend's.
    static let maxFields = 100

    /// The status of an HTTP/2 response head, checked: 100–599 and not 101.
    static func status(ofHTTP2 head: HTTP2Head) throws(HTTP2HeadProblem) -> Int {
        guard let status = head.status, status >= 100, status <= 599, status != 101 else { throw .status }
        guard head.fieldCount <= maxFields, head.fieldByteCount <= HeadLimits.responseHead else { throw .tooLarge }
        return status
    }

    /// What the client gets of a final HTTP/2 response head (`status` from
    /// ``status(ofHTTP2:)``, 200 or more): the status line and every field but the hop-by-hop
    /// ones (none come over HTTP/2 but `te` and `trailer`) and, when re-framed as chunked,
    /// `content-length`. A head that ended its stream says `content-length: 0`; a body without
    /// a length ends with the stream (framed `chunked`, the exchange's name for it).
    /// `locateLines`: also note where each kept line is (an HTTP/2 app's stream, whose head goes
    /// to its codec as fields); `reusing`: storage for the lines' bytes.
    static func response(http2 head: HTTP2Head, status: Int, endStream: Bool, requestMethod: String, clientVersion: HTTPVersion,
                         locateLines: Bool, reusing out: consuming [UInt8] = [],
                         lines kept: consuming [FieldLine] = []) throws(HTTP2HeadProblem) -> UpstreamResponse {
        let framing: BodyFraming
        if ResponseHeadParser.hasNoContent(status: status, requestMethod: requestMethod) {
            framing = .none
        } else if let length = head.firstField("content-length") {
            guard let value = UInt64(length) else { throw .contentLength }
            framing = .contentLength(value)
        } else {
            framing = endStream ? .contentLength(0) : .chunked
        }
        let clientFraming = clientFraming(framing, clientVersion: clientVersion)
        var out = consume out
        var kept = consume kept
        out.removeAll(keepingCapacity: true)
        out.reserveCapacity(head.fieldByteCount + head.fieldCount * 4 + 64 + Self.tailCapacity)
        out.append(HeadBytes.http11Space)
        out.append(UInt8(0x30 + status / 100))
        out.append(UInt8(0x30 + status / 10 % 10))
        out.append(UInt8(0x30 + status % 10))
        out.append(0x20)
        out.appendUTF8(HeadSerializer.reasonPhrase(status))
        out.append(HeadBytes.crlf)
        kept.removeAll(keepingCapacity: true)
        if locateLines { kept.reserveCapacity(head.fieldCount + 2) }
        // (A static helper, not a nested function: one capturing `out` and `kept`, called from
        // the closure, put both in heap boxes, two allocations and frees a response.)
        head.forEachField { name, value in
            if FieldNames.isHopByHop(name: name) { return }
            if clientFraming == .chunked && HTTP2Codec.equalsIgnoringCase(name, "content-length") { return }
            keep(name, value, into: &out, lines: &kept, locate: locateLines)
        }
        if endStream && framing == .contentLength(0) && !head.hasField("content-length") {
            let name: StaticString = "content-length", zero: StaticString = "0"
            keep(UnsafeRawBufferPointer(start: name.utf8Start, count: name.utf8CodeUnitCount),
                 UnsafeRawBufferPointer(start: zero.utf8Start, count: zero.utf8CodeUnitCount), into: &out, lines: &kept,
                 locate: locateLines)
        }
        var response = UpstreamResponse(status: status, framing: framing, clientFraming: clientFraming, keepAlive: true,
                                        forwardedLines: out, otherCodings: [])
        if locateLines { response.keptLines = kept }
        return response
    }

    /// Appends `name: value` and CRLF to `out`, and where its name and value are to `lines` when
    /// `locate`.
    private static func keep(_ name: UnsafeRawBufferPointer, _ value: UnsafeRawBufferPointer, into out: inout [UInt8],
                             lines: inout [FieldLine], locate: Bool) {
        let nameStart = out.count
        out.append(contentsOf: name)
        let nameEnd = out.count
        out.append(0x3a)
        out.append(0x20)
        let valueStart = out.count
        out.append(contentsOf: value)
        if locate { lines.append(FieldLine(name: nameStart..<nameEnd, value: valueStart..<out.count)) }
        out.append(HeadBytes.crlf)
    }

    /// Whether an HTTP/2 response head that ended its stream is gRPC's trailers-only
    /// UNAUTHENTICATED (HTTP 200, `grpc-status: 16`), as ``isGRPCUnauthenticated(_:)`` says of a
    /// text head with `content-length: 0`.
    static func isGRPCUnauthenticated(http2 head: HTTP2Head, status: Int, endStream: Bool) -> Bool {
        status == 200 && endStream && head.firstField("grpc-status") == "16"
    }

    /// ``readDPoP(_:nonces:origin:)`` for an HTTP/2 response head.
    static func readDPoP(http2 head: HTTP2Head, status: Int, nonces: DPoPNonces, origin: String) -> Bool {
        var nonce = false
        var asked = false
        head.forEachField { name, value in
            if HTTP2Codec.equalsIgnoringCase(name, "dpop-nonce") {
                let text = String(decoding: value, as: UTF8.self)
                nonce = DPoPNonces.isValid(text)
                nonces.remember(text, for: origin)
            } else if status == 401 && HTTP2Codec.equalsIgnoringCase(name, "www-authenticate") {
                asked = asked || value.firstRange(of: Array("use_dpop_nonce".utf8)) != nil
            }
        }
        return nonce && asked
    }
}
