import EventLoop
import HTTP1
import HTTP2
import TokenManager
import Tracing

/// Builds the head sent upstream from a client's request head.
///
/// Order matters for safety: every hop-by-hop field (including those the client names in
/// `Connection`) and, for credentialed routes, every client `Authorization` line is dropped
/// first; only then is the single injected `Authorization` added — so `Connection: close,
/// Authorization` from a client can never remove the token the proxy adds.
enum RequestRewriter {
    /// The upstream request head: origin-form target, HTTP/1.1, `Host` per the route, the token
    /// line when `token` is given, `Via`, and chunked framing when the client's body is chunked.
    /// `upgrade`: the protocol the request switches to, as the app named it: the request says
    /// `Upgrade: <it>` and `Connection: upgrade`, and nothing else of the app's `Upgrade` lines
    /// goes on (a list could name a protocol the route does not allow).
    /// `trace`: how the W3C trace fields are rewritten while tracing is on (nil: untouched).
    /// `via`: the protocol the request came in (its `Via` entry's version).
    static func head(for request: RequestHead, decision: RouteDecision, token: AccessToken?, upgrade: String? = nil,
                     trace: TraceFieldRewrite? = nil, via: ViaProtocol = .http1_1) -> [UInt8] {
        if let injection = decision.injection, let token {
            return head(for: CredentialEdit.apply(request, injection, token: token.value), decision: decision, token: nil,
                        upgrade: upgrade, trace: trace, via: via)
        }
        var out: [UInt8] = []
        let make: (Int, (inout HeadWriter) -> Void) -> Void = { maxCount, body in out = HeadWriter.bytes(maxCount: maxCount, body) }
        if let trace {
            write(request, decision: decision, token: token, upgrade: upgrade, trace: trace, via: via, reserve: make)
        } else {
            write(request, decision: decision, token: token, upgrade: upgrade, trace: UntouchedTraceFields(), via: via, reserve: make)
        }
        return out
    }

    /// Writes ``head(for:decision:token:upgrade:trace:via:)`` at the end of `output`, in place; returns its size.
    /// The trace fields go untouched.
    static func write(_ request: RequestHead, decision: RouteDecision, token: AccessToken?, upgrade: String? = nil,
                      via: ViaProtocol, to output: EventBuffer) -> Int {
        if decision.injection != nil, let token {
            return writeEdited(request, decision: decision, token: token, upgrade: upgrade, trace: nil, via: via, to: output)
        }
        return writeHead(request, decision: decision, token: token, upgrade: upgrade, trace: UntouchedTraceFields(), via: via,
                         to: output)
    }

    /// The head of a request whose credential goes elsewhere than the default `Authorization`
    /// line (a placement, a placeholder): edited first (``CredentialEdit``), then written with
    /// no token line of its own. Out of line: the default head never carries this code.
    @inline(never)
    private static func writeEdited(_ request: RequestHead, decision: RouteDecision, token: AccessToken, upgrade: String?,
                                    trace: TraceFieldRewrite?, via: ViaProtocol, to output: EventBuffer) -> Int {
        let edited = CredentialEdit.apply(request, decision.injection!, token: token.value)
        if let trace {
            return writeHead(edited, decision: decision, token: nil, upgrade: upgrade, trace: trace, via: via, to: output)
        }
        return writeHead(edited, decision: decision, token: nil, upgrade: upgrade, trace: UntouchedTraceFields(), via: via, to: output)
    }

    /// Writes the head with `trace`'s `traceparent` in place of the app's, at the end of `output`; returns its size.
    /// Inlined into the traced send step (itself out of line), so the head is borrowed, not copied.
    @inline(__always)
    static func write(_ request: RequestHead, decision: RouteDecision, token: AccessToken?, upgrade: String? = nil,
                      trace: TraceFieldRewrite, via: ViaProtocol, to output: EventBuffer) -> Int {
        if decision.injection != nil, let token {
            return writeEdited(request, decision: decision, token: token, upgrade: upgrade, trace: trace, via: via, to: output)
        }
        return writeHead(request, decision: decision, token: token, upgrade: upgrade, trace: trace, via: via, to: output)
    }

    /// Generic over the trace policy so that the untraced head, the one every request writes
    /// while tracing is off, is compiled without a trace test at all.
    @inline(__always)
    private static func writeHead<Trace: TraceFieldPolicy>(_ request: RequestHead, decision: RouteDecision, token: AccessToken?,
                                                       upgrade: String?, trace: Trace, via: ViaProtocol,
                                                       to output: EventBuffer) -> Int {
        var written = 0
        write(request, decision: decision, token: token, upgrade: upgrade, trace: trace, via: via) { maxCount, body in
            output.write(reserving: maxCount) { buffer in
                var writer = HeadWriter(buffer)
                body(&writer)
                written = writer.count
                return written
            }
        }
        return written
    }

    /// Computes an upper bound of the head's size and hands `reserve` that bound and the writer
    /// of the head, for it to run over that much reserved memory.
    private static func write(_ request: RequestHead, decision: RouteDecision, token: AccessToken?, upgrade: String?,
                              trace: some TraceFieldPolicy, via: ViaProtocol, reserve: (Int, (inout HeadWriter) -> Void) -> Void) {
        let binding = token?.binding?.dpopKey == nil ? nil : token?.binding
        let proof = token.flatMap { token in binding.flatMap { dpopProof(for: request, decision: decision, token: token, binding: $0) } }
        let path: String?
        switch request.target {
        case .origin(let target), .absolute(_, _, let target): path = target
        case .asterisk: path = nil
        case .authority(let authority): path = authority.description
        }
        // An edited head (a placement, a placeholder) has its credential in place already.
        let stripAuthorization = decision.credential != nil && decision.injection == nil
        let perRequest = decision.perRequest
        request.withFieldSection { section in
            var maxCount = request.method.utf8.count + 1 + (path?.utf8.count ?? 1) + HeadBytes.spaceHTTP11Host.utf8CodeUnitCount
                + decision.hostField.utf8.count + 2 + section.bytes.count + ViaProtocol.longestLine + 2
            switch request.framing {
            case .contentLength: maxCount += HeadBytes.contentLengthPrefix.utf8CodeUnitCount + HeadWriter.maxDecimalCount + 2
            case .chunked: maxCount += HeadBytes.chunkedLine.utf8CodeUnitCount
            case .none, .untilClose: break
            }
            if let token { maxCount += token.headerLine.count }
            if let upgrade { maxCount += HeadBytes.upgradePrefix.utf8CodeUnitCount + upgrade.utf8.count + 2
                + HeadBytes.connectionUpgrade.utf8CodeUnitCount }
            if let proof { maxCount += HeadBytes.dpopPrefix.utf8CodeUnitCount + proof.utf8.count + 2 }
            if trace.replacesTraceParent { maxCount += HeadBytes.traceParentPrefix.utf8CodeUnitCount + TraceParent.length + 2 }
            reserve(maxCount) { out in
                out.write(text: request.method)
                out.write(byte: 0x20)
                if let path { out.write(text: path) } else { out.write(byte: 0x2a) }
                out.write(HeadBytes.spaceHTTP11Host)
                out.write(text: decision.hostField)
                out.write(HeadBytes.crlf)
                // Kept lines are copied as they arrived, each run of consecutive kept lines in one copy.
                let connectionNamed = section.connectionOptions()
                // Two flags, not the optional rewrite, reach the per-line test.
                let dropTraceParent = trace.replacesTraceParent
                let dropTraceState = trace.dropsTraceState
                var runStart: Int?
                for line in section.lines {
                    // The trace fields are tested apart from `keeps`, and only while tracing is on:
                    // as a parameter of `keeps` they cost every request ~170 instructions (it was
                    // no longer inlined).
                    if keeps(line, in: section, connectionNamed: connectionNamed, stripAuthorization: stripAuthorization,
                             perRequest: perRequest)
                        && !(dropTraceParent && isTraceField(line, in: section, orState: dropTraceState)) {
                        if runStart == nil { runStart = line.name.lowerBound }
                    } else if let start = runStart {
                        out.write(UnsafeRawBufferPointer(rebasing: section.bytes[start..<line.name.lowerBound]))
                        runStart = nil
                    }
                }
                if let start = runStart {
                    out.write(UnsafeRawBufferPointer(rebasing: section.bytes[start..<section.bytes.count - 2]))
                }
                switch request.framing {
                case .contentLength(let length):
                    out.write(HeadBytes.contentLengthPrefix)
                    out.writeDecimal(length)
                    out.write(HeadBytes.crlf)
                case .chunked:
                    out.write(HeadBytes.chunkedLine)
                case .none, .untilClose:
                    break
                }
                if let token { out.write(token.headerLine) }
                if let upgrade {
                    out.write(HeadBytes.upgradePrefix)
                    out.write(text: upgrade)
                    out.write(HeadBytes.crlf)
                    out.write(HeadBytes.connectionUpgrade)
                }
                if let proof {
                    out.write(HeadBytes.dpopPrefix)
                    out.write(text: proof)
                    out.write(HeadBytes.crlf)
                }
                if let traceParent = trace.replacement {
                    out.write(HeadBytes.traceParentPrefix)
                    out.writeTraceParent(traceParent)
                    out.write(HeadBytes.crlf)
                }
                via.writeLine(&out)
                out.write(HeadBytes.crlf)
            }
        }
    }

    /// Whether a client's field line goes upstream: not Host or Content-Length (the proxy writes
    /// its own), no hop-by-hop line or one the client named in `Connection`, not the client's
    /// `Authorization` or `DPoP` on a credentialed route (the app's own proof goes with the app's
    /// own token: only ours goes, also when the server answered a DPoP token request with a
    /// bearer token), not a header that only selects the route's per-request token.
    @inline(__always)
    private static func keeps(_ line: FieldLine, in section: FieldSectionView, connectionNamed: [Range<Int>],
                              stripAuthorization: Bool, perRequest: RouteTokens?) -> Bool {
        if section.name(of: line, equals: "host") || section.name(of: line, equals: "content-length") { return false }
        if FieldNames.isHopByHop(line, in: section) { return false }
        if stripAuthorization && (section.name(of: line, equals: "authorization") || section.name(of: line, equals: "dpop")) {
            return false
        }
        if !connectionNamed.isEmpty && section.name(of: line, isAmong: connectionNamed) { return false }
        if let perRequest, perRequest.consumes(line, in: section) { return false }
        return true
    }

    /// Whether `line` is the app's `traceparent` (or, with `orState`, its `tracestate`), which
    /// tracing replaces. Only the traced head's specialization tests it.
    @inline(__always)
    private static func isTraceField(_ line: FieldLine, in section: FieldSectionView, orState: Bool) -> Bool {
        section.name(of: line, equals: "traceparent") || orState && section.name(of: line, equals: "tracestate")
    }

    /// `scheme://authority` of the upstream as it sees itself (the `Host` it receives): where a
    /// DPoP proof's `htu` points and the key of the nonces it hands out.
    static func upstreamOrigin(_ decision: RouteDecision) -> String {
        (decision.target.tls == nil ? "http://" : "https://") + decision.hostField
    }

    /// A fresh DPoP proof (RFC 9449 §7) for the request as the upstream receives it: its method,
    /// `htu` the upstream origin and path (no query), `ath` of the token, the origin's nonce.
    /// Nil only when signing fails (OpenSSL out of memory): the request then goes without a
    /// proof, and the resource server's 401 reaches the app.
    private static func dpopProof(for request: RequestHead, decision: RouteDecision, token: AccessToken,
                                  binding: TokenBinding) -> String? {
        let path: String
        switch request.target {
        case .origin(let target), .absolute(_, _, let target): path = target
        case .asterisk, .authority: path = ""  // the target URI is the origin itself (RFC 9110 §7.1)
        }
        return try? binding.proof(method: request.method, origin: upstreamOrigin(decision), path: path,
                                  accessToken: token.value, now: SystemTokenClock().wallClockSeconds)
    }
}

/// How the rewriter treats the app's W3C trace fields. Two types, not an optional: the
/// untraced head is a specialization with the trace tests folded away.
protocol TraceFieldPolicy {
    /// The `traceparent` to write in place of the app's (nil: the app's goes on untouched).
    var replacement: SpanContext? { get }
    /// Whether the app's `traceparent` lines are dropped.
    var replacesTraceParent: Bool { get }
    /// Whether the app's `tracestate` lines are dropped too.
    var dropsTraceState: Bool { get }
}

/// Tracing off: the trace fields pass untouched.
struct UntouchedTraceFields: TraceFieldPolicy {
    var replacement: SpanContext? { nil }
    var replacesTraceParent: Bool { false }
    var dropsTraceState: Bool { false }
}

extension TraceFieldRewrite: TraceFieldPolicy {
    var replacement: SpanContext? { traceParent }
    var replacesTraceParent: Bool { true }
    var dropsTraceState: Bool { !keepTraceState }
}

/// The upstream request for an HTTP/2 upstream, as a typed head (RFC 9113 §8.3.1): the same
/// rewrite as the HTTP/1.1 head (``RequestRewriter/write(_:decision:token:upgrade:to:)``) —
/// the same lines kept, the same token, proof, trace and `Via` lines added — handed to the
/// codec as name/value pairs, never written as HTTP/1.1 text and parsed back.
extension RequestRewriter {
    /// The head: `:method`, `:scheme` (the upstream's), `:authority` (the `Host` the route
    /// gives), `:path`, then the kept fields (without `host`, `content-length` and every
    /// hop-by-hop field), `content-length` when the body has one, the token, a DPoP proof,
    /// `traceparent` (while tracing), `via`, and `te: trailers` (the sidecar relays trailers;
    /// gRPC servers require it). No `Upgrade`: HTTP/2 has none (a request asking for one goes
    /// on as a plain request).
    /// `via`: the protocol the request came in (its `via` entry's version).
    static func http2Head(for request: RequestHead, decision: RouteDecision, token: AccessToken?, scheme: String,
                          trace: TraceFieldRewrite? = nil, via: ViaProtocol = .http1_1) -> HTTP2Head {
        withHTTP2Rewrite(of: request, decision: decision, token: token, trace: trace, via: via) {
            (method, authority, path, fields, bytes, _, write: (inout HTTP2Head.FieldWriter) -> Void) in
            HTTP2Head(method: method, scheme: scheme, authority: authority, path: path, fields: fields, bytes: bytes, write: write)
        }
    }

    /// Opens a stream on `codec` with the head ``http2Head(for:decision:token:scheme:trace:via:)``
    /// makes, handed to the codec as it is written (the kept lines by reference, the added
    /// fields copied: ``RequestFieldPairs``); returns the stream's id. `endStream`: the request
    /// has no body.
    static func submitHTTP2(_ request: RequestHead, decision: RouteDecision, token: AccessToken?, scheme: String,
                            trace: TraceFieldRewrite?, via: ViaProtocol, endStream: Bool,
                            codec: HTTP2Codec) throws(HTTP2CodecError) -> Int32 {
        let opened = withHTTP2Rewrite(of: request, decision: decision, token: token, trace: trace, via: via) {
            (method, authority, path, _, _, added, write: (inout RequestFieldPairs) -> Void) in
            Result { () throws(HTTP2CodecError) -> Int32 in
                try codec.submitRequest(method: method, scheme: scheme, authority: authority, path: path, copyBytes: added,
                                        endStream: endStream, write: write)
            }
        }
        return try opened.get()
    }

    /// The rewrite both make: `body` called with the request's `:method`, `:authority` and
    /// `:path` values, the most fields and bytes (names and values) the regular fields take,
    /// the most bytes of them that are added (not lines of the request), and what writes them
    /// into `Sink` (valid during the call: the kept lines are handed over as the request holds
    /// them, valid through `body`; the added ones only through their `addCopy`).
    private static func withHTTP2Rewrite<R, Sink: HTTP2FieldSink>(
        of request: RequestHead, decision: RouteDecision, token: AccessToken?, trace: TraceFieldRewrite?, via: ViaProtocol,
        _ body: (_ method: String, _ authority: String, _ path: String, _ fields: Int, _ bytes: Int, _ added: Int,
                 _ write: (inout Sink) -> Void) -> R
    ) -> R {
        if let injection = decision.injection, let token {
            return withHTTP2Rewrite(of: CredentialEdit.apply(request, injection, token: token.value), decision: decision, token: nil,
                                    trace: trace, via: via, body)
        }
        let path: String
        switch request.target {
        case .origin(let target), .absolute(_, _, let target): path = target
        case .asterisk: path = "*"
        case .authority(let authority): path = authority.description
        }
        let binding = token?.binding?.dpopKey == nil ? nil : token?.binding
        var proof = token.flatMap { token in binding.flatMap { dpopProof(for: request, decision: decision, token: token, binding: $0) } }
        let stripAuthorization = decision.credential != nil && decision.injection == nil
        let perRequest = decision.perRequest
        let dropTraceParent = trace != nil, dropTraceState = trace.map { !$0.keepTraceState } ?? false
        var traceValue: [UInt8] = []
        if let traceParent = trace?.traceParent {
            traceValue = [UInt8](repeating: 0, count: TraceParent.length)
            traceValue.withUnsafeMutableBytes { TraceParent.write(traceParent, into: $0) }
        }
        var lengthDigits: String?
        if case .contentLength(let length) = request.framing { lengthDigits = String(length) }
        let proofSize = proof?.utf8.count ?? 0
        // Written in one pass into storage sized once: the kept lines' names and values are at
        // most the section's bytes; the fields added after them are bounded here.
        let added = 14 + 20 + 13 + (token?.headerLine.count ?? 0) + 4 + proofSize + 11 + traceValue.count
            + 3 + ViaProtocol.longestValue + 2 + Self.trailersValue.utf8CodeUnitCount
        return request.withFieldSection { section in
            let connectionNamed = section.connectionOptions()
            return body(request.method, decision.hostField, path, section.lines.count + 6, section.bytes.count + added, added) { out in
                for line in section.lines {
                    guard keeps(line, in: section, connectionNamed: connectionNamed, stripAuthorization: stripAuthorization,
                                perRequest: perRequest),
                          !(dropTraceParent && isTraceField(line, in: section, orState: dropTraceState)) else { continue }
                    out.add(name: UnsafeRawBufferPointer(rebasing: section.bytes[line.name]),
                            value: UnsafeRawBufferPointer(rebasing: section.bytes[line.value]))
                }
                if var digits = lengthDigits {
                    digits.withUTF8 { out.addCopy(name: "content-length", value: UnsafeRawBufferPointer($0)) }
                }
                if let token {
                    // "Authorization: <scheme> <token>\r\n": the value between the name and the CRLF.
                    token.headerLine.withUnsafeBytes { line in
                        out.addCopy(name: "authorization", value: UnsafeRawBufferPointer(rebasing: line[15..<line.count - 2]))
                    }
                }
                if proof != nil {
                    proof!.withUTF8 { out.addCopy(name: "dpop", value: UnsafeRawBufferPointer($0)) }
                }
                if !traceValue.isEmpty {
                    traceValue.withUnsafeBytes { out.addCopy(name: "traceparent", value: $0) }
                }
                // (Constants: valid for as long as the process.)
                let viaValue = via.value
                out.add(name: "via", value: UnsafeRawBufferPointer(start: viaValue.utf8Start, count: viaValue.utf8CodeUnitCount))
                out.add(name: "te", value: UnsafeRawBufferPointer(start: Self.trailersValue.utf8Start,
                                                                  count: Self.trailersValue.utf8CodeUnitCount))
            }
        }
    }

    /// `te`'s only value in HTTP/2.
    private static let trailersValue: StaticString = "trailers"
}
