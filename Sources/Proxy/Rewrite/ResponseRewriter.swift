import HTTP1
import TokenManager

/// How the proxy frames a response body toward the client.
enum ClientFraming: Equatable {
    /// No body (HEAD, 1xx, 204, 304).
    case none
    /// Same Content-Length as the backend sent.
    case contentLength
    /// Re-framed as chunked (backend sent chunked, or close-delimited to an HTTP/1.1 client).
    case chunked
    /// Raw bytes ended by closing the connection (HTTP/1.0 clients without a length).
    case close
}

/// What the session keeps of a backend's final response head: the facts the exchange needs and
/// the client-facing status line and fields, already copied as bytes while the head was parsed
/// (the backend's buffer is drained right after).
struct UpstreamResponse {
    /// The status code.
    let status: Int
    /// The backend's body framing.
    let framing: BodyFraming
    /// The framing toward the client.
    let clientFraming: ClientFraming
    /// Whether the backend lets the connection be reused.
    let keepAlive: Bool
    /// `HTTP/1.1 <status> <reason>` and every forwarded field line, CRLF-terminated; emptied
    /// once ``ResponseRewriter/head(for:clientVersion:keepAlive:)`` has taken them.
    var forwardedLines: [UInt8]
    /// Transfer codings besides `chunked`, in order (rare: e.g. `gzip, chunked`).
    let otherCodings: [String]
    /// Where each forwarded field line's name and value are in ``forwardedLines`` (only when
    /// asked for, ``ResponseRewriter/locateKeptLines(of:in:reusing:)``: an HTTP/2 app's stream,
    /// whose head goes to the codec as fields, not as text).
    var keptLines: [FieldLine] = []
    /// A 401 asking for a DPoP nonce (``ResponseRewriter/readDPoP(_:nonces:origin:)``).
    var nonceChallenge = false
    /// A gRPC call's trailers-only UNAUTHENTICATED (``Exchange/ResponseHeadFacts/grpcUnauthenticated``).
    var grpcUnauthenticated = false
    /// The protocol the response came in (its `Via` entry's version).
    var via = ViaProtocol.http1_1
}

/// Builds the head sent to the client from a backend's response head.
enum ResponseRewriter {
    /// The framing toward a client of `clientVersion` for a backend body framed as `framing`.
    static func clientFraming(_ framing: BodyFraming, clientVersion: HTTPVersion) -> ClientFraming {
        switch framing {
        case .none: return .none
        case .contentLength: return .contentLength
        case .chunked, .untilClose: return clientVersion == .http1_1 ? .chunked : .close
        }
    }

    /// Keeps what the client gets of `view` for a client of `clientVersion`: the status line
    /// and every field line except the hop-by-hop ones (those the Connection field names
    /// included) and, when re-framed as chunked, Content-Length. Kept lines are copied as they
    /// arrived, each run of consecutive kept lines in one copy.
    /// `reusing`: an empty array whose storage the head is built in (no allocation when it is
    /// large enough).
    static func response(_ view: ResponseHeadView, clientVersion: HTTPVersion,
                         reusing out: consuming [UInt8] = []) -> UpstreamResponse {
        let framing = clientFraming(view.framing, clientVersion: clientVersion)
        out.removeAll(keepingCapacity: true)
        // Room for what ``head(for:clientVersion:keepAlive:)`` appends, so it never reallocates.
        out.reserveCapacity(view.bytes.count + Self.tailCapacity)
        out.append(HeadBytes.http11Space)
        out.append(UInt8(0x30 + view.status / 100))
        out.append(UInt8(0x30 + view.status / 10 % 10))
        out.append(UInt8(0x30 + view.status % 10))
        out.append(0x20)
        // The reason phrase (maybe empty) and the status line's CRLF, as one copy.
        out.append(contentsOf: UnsafeRawBufferPointer(rebasing: view.bytes[view.reasonStart..<view.reasonEnd + 2]))
        let section = view.section
        let connectionNamed = section.connectionOptions()
        // A line runs from its name to the next line's name; the last one to the section's CRLF.
        var runStart: Int?
        for line in section.lines {
            // (Written out, not `isDropped`: on the HTTP/1.1 path the call cost 200 instructions
            // per request in a `make release` build.)
            let dropped = FieldNames.isHopByHop(line, in: section)
                || (!connectionNamed.isEmpty && section.name(of: line, isAmong: connectionNamed))
                || (framing == .chunked && section.name(of: line, equals: "content-length"))
            if dropped {
                if let start = runStart {
                    out.append(contentsOf: UnsafeRawBufferPointer(rebasing: view.bytes[start..<line.name.lowerBound]))
                    runStart = nil
                }
            } else if runStart == nil {
                runStart = line.name.lowerBound
            }
        }
        if let start = runStart {
            out.append(contentsOf: UnsafeRawBufferPointer(rebasing: view.bytes[start..<view.bytes.count - 2]))
        }
        let codings = view.hasTransferEncoding ? view.transferCodings().filter { $0 != "chunked" } : []
        return UpstreamResponse(status: view.status, framing: view.framing, clientFraming: framing,
                                keepAlive: view.keepAlive, forwardedLines: out, otherCodings: codings,
                                via: ViaProtocol(view.version, http2: false))
    }

    /// Whether `line` stays with this hop: hop-by-hop fields, those the Connection field names,
    /// and Content-Length when the body is re-framed as chunked (as the copy's loop decides).
    private static func isDropped(_ line: FieldLine, _ section: FieldSectionView, _ connectionNamed: [Range<Int>],
                                  _ framing: ClientFraming) -> Bool {
        FieldNames.isHopByHop(line, in: section)
            || (!connectionNamed.isEmpty && section.name(of: line, isAmong: connectionNamed))
            || (framing == .chunked && section.name(of: line, equals: "content-length"))
    }

    /// Sets `response.keptLines` (``response(_:clientVersion:reusing:)`` made `response` of
    /// `view`): where each kept line is in its copy. Kept lines are copied back to back after
    /// the status line, each from its name to the next line's. `reusing`: an empty array whose
    /// storage takes them (a head done with gives its own; not passed through
    /// ``response(_:clientVersion:reusing:)``, where any extra argument cost every HTTP/1.1
    /// response instructions).
    static func locateKeptLines(of view: ResponseHeadView, in response: inout UpstreamResponse,
                                reusing kept: consuming [FieldLine] = []) {
        let section = view.section
        let connectionNamed = section.connectionOptions()
        let framing = response.clientFraming
        kept.removeAll(keepingCapacity: true)
        // Room for every line, and the Via an HTTP/2 stream adds: at most one allocation.
        kept.reserveCapacity(section.lines.count + 1)
        // "HTTP/1.1 ", the status, a space, the reason and its CRLF.
        var position = HeadBytes.http11Space.utf8CodeUnitCount + 4 + view.reasonEnd + 2 - view.reasonStart
        for (index, line) in section.lines.enumerated() where !isDropped(line, section, connectionNamed, framing) {
            let shift = position - line.name.lowerBound
            kept.append(FieldLine(name: line.name.lowerBound + shift..<line.name.upperBound + shift,
                                  value: line.value.lowerBound + shift..<line.value.upperBound + shift))
            position += section.lineEnd(index) - line.name.lowerBound
        }
        response.keptLines = kept
    }

    /// The most ``head(for:clientVersion:keepAlive:)`` appends without other codings:
    /// `Transfer-Encoding: chunked`, a Connection line, Via and the final CRLF.
    static var tailCapacity: Int {
        HeadBytes.chunkedLine.utf8CodeUnitCount + HeadBytes.connectionKeepAlive.utf8CodeUnitCount
            + ViaProtocol.longestLine + 2
    }

    /// For a request that carried a DPoP proof: remembers the response's `DPoP-Nonce` for
    /// `origin` and says whether the response is a nonce challenge (RFC 9449 §9: a 401 with
    /// `WWW-Authenticate: DPoP error="use_dpop_nonce"` and a nonce).
    static func readDPoP(_ view: ResponseHeadView, nonces: DPoPNonces, origin: String) -> Bool {
        var nonce = false
        var asked = false
        for line in view.fieldLines {
            if view.name(of: line, equals: "dpop-nonce") {
                let value = String(decoding: UnsafeRawBufferPointer(rebasing: view.bytes[line.value]), as: UTF8.self)
                nonce = DPoPNonces.isValid(value)
                nonces.remember(value, for: origin)
            } else if view.status == 401 && view.name(of: line, equals: "www-authenticate") {
                let value = UnsafeRawBufferPointer(rebasing: view.bytes[line.value])
                asked = asked || value.firstRange(of: Array("use_dpop_nonce".utf8)) != nil
            }
        }
        return nonce && asked
    }

    /// The client-facing head of a `101 Switching Protocols`: the status line and every field
    /// line but the hop-by-hop ones, then the backend's `Upgrade` lines, `Connection: upgrade`
    /// and Via (RFC 9110 §7.8: the switch is this hop's, and the client asked for it).
    static func switchingProtocols(_ view: ResponseHeadView) -> [UInt8] {
        var out = response(view, clientVersion: .http1_1).forwardedLines
        for line in view.fieldLines where view.name(of: line, equals: "upgrade") {
            out.append(contentsOf: UnsafeRawBufferPointer(rebasing: view.bytes[line.name.lowerBound..<line.value.upperBound]))
            out.append(HeadBytes.crlf)
        }
        out.append(HeadBytes.connectionUpgrade)
        ViaProtocol(view.version, http2: false).appendLine(to: &out)
        out.append(HeadBytes.crlf)
        return out
    }

    /// The client-facing head: `response`'s forwarded lines (moved out, so it is built in place
    /// in the room ``response(_:clientVersion:)`` reserved) and the proxy's own lines.
    /// `keepAlive` says whether the client connection stays open after this response.
    static func head(for response: inout UpstreamResponse, clientVersion: HTTPVersion, keepAlive: Bool) -> [UInt8] {
        var out: [UInt8] = []
        swap(&out, &response.forwardedLines)
        if response.clientFraming == .chunked {
            // Codings other than chunked (e.g. gzip) stay: the relay only re-frames the chunks.
            if response.otherCodings.isEmpty {
                out.append(HeadBytes.chunkedLine)
            } else {
                out.appendField("Transfer-Encoding", (response.otherCodings + ["chunked"]).joined(separator: ", "))
            }
        }
        if !keepAlive {
            out.append(HeadBytes.connectionClose)
        } else if clientVersion == .http1_0 {
            out.append(HeadBytes.connectionKeepAlive)
        }
        response.via.appendLine(to: &out)
        out.append(HeadBytes.crlf)
        return out
    }
}

extension ResponseRewriter {
    /// Whether `view` is a trailers-only gRPC response with `grpc-status: 16` (UNAUTHENTICATED):
    /// HTTP 200, no body, the status in the head.
    static func isGRPCUnauthenticated(_ view: ResponseHeadView) -> Bool {
        guard view.status == 200, view.framing == .contentLength(0) else { return false }
        let section = view.section
        return view.fieldLines.contains { line in
            guard section.name(of: line, equals: "grpc-status") else { return false }
            let value = section.value(of: line)
            return value.count == 2 && value[0] == 0x31 && value[1] == 0x36  // "16"
        }
    }
}
