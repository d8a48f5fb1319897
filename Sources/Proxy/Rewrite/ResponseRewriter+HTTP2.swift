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
        let reason = HeadSerializer.reasonPhrase(status)
        let addsZeroLength = endStream && framing == .contentLength(0) && !head.hasField("content-length")
        let zeroLength: StaticString = "content-length", zero: StaticString = "0"
        // Sized first, then written in one pass into the bytes (an append per piece was ~900
        // instructions of every gRPC response).
        var size = HeadBytes.http11Space.utf8CodeUnitCount + 4 + reason.utf8.count + 2
        var lineCount = 0
        head.forEachField { name, value in
            guard keeps(name, clientFraming: clientFraming) else { return }
            size += name.count + value.count + 4
            lineCount += 1
        }
        if addsZeroLength {
            size += zeroLength.utf8CodeUnitCount + zero.utf8CodeUnitCount + 4
            lineCount += 1
        }
        PresizedSectionWriter.resize(&out, to: size, spare: Self.tailCapacity)
        kept.removeAll(keepingCapacity: true)
        if locateLines { kept.reserveCapacity(lineCount) }
        out.withUnsafeMutableBytes { buffer in
            var writer = PresizedSectionWriter(buffer)
            writer.put(HeadBytes.http11Space)
            writer.put(byte: UInt8(0x30 + status / 100))
            writer.put(byte: UInt8(0x30 + status / 10 % 10))
            writer.put(byte: UInt8(0x30 + status % 10))
            writer.put(byte: 0x20)
            writer.put(text: reason)
            writer.put(HeadBytes.crlf)
            var lines: [FieldLine] = []
            swap(&lines, &kept)
            head.forEachField { name, value in
                guard keeps(name, clientFraming: clientFraming) else { return }
                let line = writer.line(name: name, value: value)
                if locateLines { lines.append(line) }
            }
            if addsZeroLength {
                let line = writer.line(name: UnsafeRawBufferPointer(start: zeroLength.utf8Start, count: zeroLength.utf8CodeUnitCount),
                                       value: UnsafeRawBufferPointer(start: zero.utf8Start, count: zero.utf8CodeUnitCount))
                if locateLines { lines.append(line) }
            }
            swap(&lines, &kept)
            precondition(writer.position == size, "an HTTP/2 response head came out shorter than its size")
        }
        var response = UpstreamResponse(status: status, framing: framing, clientFraming: clientFraming, keepAlive: true,
                                        forwardedLines: out, otherCodings: [], via: .http2)
        if locateLines { response.keptLines = kept }
        return response
    }

    /// Whether a received field goes on to the client: not hop-by-hop, nor a `content-length`
    /// a response re-framed as chunked drops.
    private static func keeps(_ name: UnsafeRawBufferPointer, clientFraming: ClientFraming) -> Bool {
        if FieldNames.isHopByHop(name: name) { return false }
        return !(clientFraming == .chunked && HTTP2Codec.equalsIgnoringCase(name, "content-length"))
    }

    /// Whether an HTTP/2 response head that ended its stream is gRPC's trailers-only
    /// UNAUTHENTICATED (HTTP 200, `grpc-status: 16`), as ``isGRPCUnauthenticated(_:)`` says of a
    /// text head with `content-length: 0`.
    static func isGRPCUnauthenticated(http2 head: HTTP2Head, status: Int, endStream: Bool) -> Bool {
        status == 200 && endStream && head.firstField("grpc-status") == "16"
    }

    /// Whether an HTTP/2 response's trailers say gRPC's UNAUTHENTICATED (`grpc-status: 16`, the
    /// first `grpc-status` line's value). Names compared exactly: nghttp2 refuses a received
    /// field name with an uppercase letter (RFC 9113 §8.2.1), so HTTP/2 trailers hold lowercase
    /// names only, and a plain comparison of two short strings is a few instructions where a
    /// case-folding one cost about 240 a call.
    static func isGRPCUnauthenticated(http2Trailers trailers: HTTPFields) -> Bool {
        for index in trailers.fields.indices where trailers.fields[index].name == "grpc-status" {
            let value = trailers.fields[index].value
            // (By length first: `0`, the usual status, against `16` was an out-of-line comparison.)
            return value.utf8.count == 2 && value == "16"
        }
        return false
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
