import CNghttp2
import HTTP1

/// HTTP/2 framing for one connection, with no I/O: bytes from the peer go in
/// (``receive(_:)``) and come out as per-stream events (``HTTP2Event``); heads, body bytes,
/// trailers and resets go in through `submit…` and come out as bytes for the peer
/// (``send(into:)``). nghttp2 does the protocol — framing, HPACK, flow control, stream states
/// and RFC 9113's message rules (§8.2–8.3: lowercase names, no connection-specific fields,
/// `te` only `trailers`, no CR, LF or NUL in a value and no whitespace around it,
/// pseudo-headers exactly as required, `content-length` against the DATA; and RFC 9110 §5.5's
/// value grammar, which nghttp2 applies too: no other control character than HTAB, no DEL), so
/// a malformed message resets its stream and never reaches the consumer.
///
/// Flow control follows the consumer: a stream's receive window opens only as the consumer
/// reports bytes moved on (``consumed(stream:count:)``), so a stream whose other side does not
/// drain holds at most ``HTTP2Settings/streamWindow`` bytes, the connection at most
/// ``HTTP2Settings/connectionWindow``.
///
/// The one place that talks to nghttp2 (its callbacks are in `HTTP2Callbacks.swift`). Confined
/// to one thread, like the connection it serves.
public final class HTTP2Codec {
    /// Which side of the connection this is.
    public enum Role: Sendable {
        /// Takes requests (the app side): expects the client's preface.
        case server
        /// Sends requests (the upstream side): sends the preface.
        case client
    }

    /// This side.
    public let role: Role
    /// What this side advertised.
    public let settings: HTTP2Settings
    private var session: OpaquePointer?
    /// The allocator the session was made with, kept as long as the session (nil: the C
    /// library's). Released after the session: `deinit` frees the session first.
    private let blocks: HTTP2BlockCache?
    /// Events decoded by the current ``receive(_:)`` (filled by the callbacks).
    var events: [HTTP2Event] = []
    /// The stream of the header block being decoded (0 when none, or when the block went past
    /// the limits and is being dropped). HTTP/2 sends a block's frames back to back (RFC 9113
    /// §6.10: nothing may come between a `HEADERS` and its `CONTINUATION`s), so one block at
    /// most is ever open: no per-stream table.
    private var blockStream: Int32 = 0
    /// The head that block fills.
    private var block = HTTP2Head()
    /// What the open block may still take (bytes, fields).
    private var blockBytesLeft = 0
    private var blockFieldsLeft = 0
    /// The stream whose block went past the limits (0 for none): reported when the block ends.
    private var oversizedStream: Int32 = 0
    /// Streams whose reset needs no `.malformed` when they close: reported already, or reset by
    /// the consumer or by the peer.
    var explainedResets: Set<Int32> = []
    /// Streams with a body to send, per stream.
    var outbound = StreamTable<HTTP2OutboundBody>()
    /// A `HEADERS` or `DATA` frame went to the peer since the last ``takeMessageFrameSent()``:
    /// set where a head is submitted (`HEADERS` are not flow-controlled: they leave with the
    /// next send) and where nghttp2 asks for a `DATA` frame's bytes (it asks as it frames one).
    /// Not nghttp2's frame-sent callback: a call for every frame, about 300 instructions per
    /// stream.
    var messageFrameSent = false
    /// Queues of streams that ended, for the next streams' bodies (an object and an array
    /// allocated, and freed, per stream otherwise).
    private var spareBodies = SpareList<HTTP2OutboundBody>(limit: HTTP2Codec.spareBodyLimit)
    /// Queues kept for the next streams, at most (with at most
    /// ``HTTP2OutboundBody/keptCapacity`` bytes of storage each: 64 KiB in all). As many as
    /// heads (``spareHeadLimit``): with 16, a gRPC app's 50 calls in flight made most of their
    /// queues anew.
    static let spareBodyLimit = 64

    /// An empty queue for a stream's body: one an ended stream left, or a new one.
    private func outboundBody() -> HTTP2OutboundBody {
        spareBodies.take() ?? HTTP2OutboundBody()
    }

    /// `stream` has nothing more to send: its queue goes, kept for a next stream if there is room.
    func retireOutbound(stream: Int32) {
        guard let body = outbound.removeValue(forKey: stream) else { return }
        guard !spareBodies.isFull else { return }
        body.reset()
        spareBodies.keep(body)
    }

    /// A codec for `role` advertising `settings`. The settings go out with the first
    /// ``send(into:)`` (a client's after its preface).
    /// `blocks`: the allocator of the loop's sessions (nil: the C library's).
    public init(role: Role, settings: HTTP2Settings = HTTP2Settings(), blocks: HTTP2BlockCache? = nil) {
        self.role = role
        self.settings = settings
        self.blocks = blocks
        var callbacks: OpaquePointer?
        nghttp2_session_callbacks_new(&callbacks)
        HTTP2Callbacks.install(on: callbacks)
        var option: OpaquePointer?
        nghttp2_option_new(&option)
        // Windows open as the consumer drains, not as bytes arrive.
        nghttp2_option_set_no_auto_window_update(option, 1)
        nghttp2_option_set_max_continuations(option, settings.maxContinuations)
        // A server keeps closed streams only for RFC 7540's priority tree, which RFC 9113
        // deprecates and the proxy does not use: each stream's close would cost the upkeep.
        nghttp2_option_set_no_closed_streams(option, 1)
        // PINGs are answered here (``holdPingAnswer(_:)``): an answer goes with the next frames.
        nghttp2_option_set_no_auto_ping_ack(option, 1)
        let user = Unmanaged.passUnretained(self).toOpaque()
        if var mem = blocks?.mem {
            // (nghttp2 copies the functions; the cache lives as long as this codec.)
            switch role {
            case .server: nghttp2_session_server_new3(&session, callbacks, user, option, &mem)
            case .client: nghttp2_session_client_new3(&session, callbacks, user, option, &mem)
            }
        } else {
            switch role {
            case .server: nghttp2_session_server_new2(&session, callbacks, user, option)
            case .client: nghttp2_session_client_new2(&session, callbacks, user, option)
            }
        }
        nghttp2_option_del(option)
        nghttp2_session_callbacks_del(callbacks)
        var entries = [
            nghttp2_settings_entry(settings_id: Int32(NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS.rawValue),
                                   value: UInt32(settings.maxConcurrentStreams)),
            nghttp2_settings_entry(settings_id: Int32(NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE.rawValue),
                                   value: UInt32(settings.streamWindow)),
            nghttp2_settings_entry(settings_id: Int32(NGHTTP2_SETTINGS_MAX_HEADER_LIST_SIZE.rawValue),
                                   value: UInt32(settings.maxHeaderListSize)),
        ]
        // No server push: the proxy has no use for pushed responses (RFC 9113 §8.4).
        if role == .client {
            entries.append(nghttp2_settings_entry(settings_id: Int32(NGHTTP2_SETTINGS_ENABLE_PUSH.rawValue), value: 0))
        }
        nghttp2_submit_settings(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), entries, entries.count)
        nghttp2_session_set_local_window_size(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), 0, Int32(settings.connectionWindow))
    }

    deinit {
        nghttp2_session_del(session)
        requestCopies.deallocate()
    }

    // MARK: - bytes in, events out

    /// Decodes `bytes` from the peer; returns what they meant, in order. A protocol error that
    /// ends the connection throws (after queueing a `GOAWAY` when nghttp2 does: send what
    /// ``send(into:)`` gives, then close); the events decoded before it are lost with the
    /// connection.
    public func receive(_ bytes: UnsafeRawBufferPointer) throws(HTTP2CodecError) -> [HTTP2Event] {
        guard let base = bytes.baseAddress, !bytes.isEmpty else { return [] }
        let result = nghttp2_session_mem_recv(session, base.assumingMemoryBound(to: UInt8.self), bytes.count)
        sendWish = nil
        if result < 0 {
            failed = true
            events.removeAll(keepingCapacity: true)
            // (A PING answer refused as a flood stopped the decoding with a callback failure.)
            throw Self.error(pingAnswerError != 0 ? pingAnswerError : Int32(result))
        }
        return takeEvents()
    }

    /// Where `DATA` goes as nghttp2 decodes it, instead of a ``HTTP2Event/data(stream:_:)`` event
    /// holding a copy: called with the stream and its bytes (valid during the call only), it
    /// returns whether it took them. One that did not (no such stream yet: its head is still an
    /// event of this read; a receiver that is done with it) gets the event, in order. A sink
    /// must not call back into the codec: it runs inside nghttp2's decoding.
    public var dataSink: ((Int32, UnsafeRawBufferPointer) -> Bool)?

    /// A chunk of `stream`'s `DATA`: to the sink, or as an event (its copy in an array a
    /// consumer handed back, when there is one: ``recycle(data:)``).
    func receiveData(stream: Int32, _ bytes: UnsafeRawBufferPointer) {
        if let dataSink, dataSink(stream, bytes) { return }
        guard var copy = spareData.take() else {
            emit(.data(stream: stream, Array(bytes)))
            return
        }
        copy.append(contentsOf: bytes)
        emit(.data(stream: stream, copy))
    }

    /// The bytes of a ``HTTP2Event/data(stream:_:)`` event the consumer is done with: their
    /// array holds the next event's (a request's body that comes in the read of its head — a
    /// gRPC call's message — is such an event: an allocation and a free each otherwise). Kept
    /// only if it is a DATA frame's size or less: a few of any such size, more of small ones.
    public func recycle(data: consuming [UInt8]) {
        guard data.capacity > 0, data.capacity <= Self.keptDataCapacity, !spareData.isFull,
              spareData.count < Self.spareLargeDataLimit || data.capacity <= Self.smallDataCapacity else { return }
        data.removeAll(keepingCapacity: true)
        spareData.keep(data)
    }

    /// How many arrays of DATA events are kept (``recycle(data:)``).
    var spareDataCount: Int { spareData.count }

    /// Arrays of DATA events handed back (``recycle(data:)``): as many as ``spareHeadLimit``,
    /// for the same reason (a read of a gRPC app's calls brings each call's message beside its
    /// head: with 8 kept, two messages in three of such a read were an allocation and a free).
    private var spareData = SpareList<[UInt8]>(limit: HTTP2Codec.spareHeadLimit)
    /// The largest array kept: a DATA frame at the default `SETTINGS_MAX_FRAME_SIZE` (RFC 9113 §6.5.2).
    static let keptDataCapacity = 16 * 1024 + 64
    /// Arrays kept whatever their size (up to ``keptDataCapacity``); past these, only small ones
    /// (``smallDataCapacity``): at most 8 × 16 KiB + 56 × 1 KiB held by a busy connection.
    static let spareLargeDataLimit = 8
    /// The largest array kept past ``spareLargeDataLimit``: a message of a usual RPC.
    static let smallDataCapacity = 1024

    /// Records `event` for the current ``receive(_:)`` or ``send(limit:into:)``. The list is
    /// handed over whole (``takeEvents()``), so a call's list may start without storage: room
    /// for a few is made at once (a request's head and end, a stream's close) rather than grown
    /// one element at a time, an allocation each.
    func emit(_ event: consuming HTTP2Event) {  // (consumed: a head is moved in, not copied)
        if events.capacity == 0 { events.reserveCapacity(8) }
        events.append(event)
    }

    /// The events collected, handed over (the empty list costs no allocation: most sends
    /// lead to none); the next ones go into the storage of a list handed back
    /// (``recycle(events:)``), if there is one.
    private func takeEvents() -> [HTTP2Event] {
        guard !events.isEmpty else { return [] }
        var taken = spareEvents.take() ?? []
        swap(&taken, &events)
        // (Emptied here, not when handed back: by now the consumer holds no other reference to
        // it, so emptying keeps the storage instead of copying it. One element at a time:
        // `removeAll(keepingCapacity:)` destroyed them through the runtime's generic array
        // destroy, ~50 instructions an event, where these — moved out by the consumer, trivial
        // ones left in their place — take a few.)
        while !events.isEmpty { events.removeLast() }
        return taken
    }

    /// A list of events the consumer is done with: its storage takes the next ones (an
    /// allocation and a free fewer per read or send that leads to events). Kept only if small.
    /// Its elements stay until the list is reused: a consumer moves out what it needs kept
    /// (a head's fields) before handing the list back.
    public func recycle(events list: consuming [HTTP2Event]) {
        // (An empty list made for no events has no storage: kept, it would only take the place
        // of one that has.)
        guard list.capacity > 0, list.capacity <= Self.keptEventCapacity else { return }
        spareEvents.keep(list)
    }

    /// Storage for the next events (``recycle(events:)``).
    private var spareEvents = SpareList<[HTTP2Event]>(limit: 1)
    /// The largest list whose storage is kept.
    static let keptEventCapacity = 64

    /// Hands what is queued for the peer to `sink`, in order (maybe in several pieces; each
    /// valid only during its call), stopping once `limit` bytes went (a frame is not split: the
    /// last piece may go past it). Returns the events that sending led to: streams that closed
    /// once their last frame went (the codec's own resets of malformed messages among them —
    /// a stream the consumer already has may end this way).
    @discardableResult
    public func send(limit: Int = .max, into sink: (UnsafeRawBufferPointer) -> Void) throws(HTTP2CodecError) -> [HTTP2Event] {
        // (Held answers go when they were released or other frames go: ``wantsToSend`` says both.)
        if !heldPingAnswers.isEmpty && wantsToSend {
            let code = submitHeldPingAnswers()
            if code == NGHTTP2_ERR_FLOODED.rawValue {
                failed = true
                throw Self.error(code)
            }
        }
        var sent = 0
        while sent < limit {
            var data: UnsafePointer<UInt8>?
            let n = nghttp2_session_mem_send(session, &data)
            sendWish = nil
            if n < 0 {
                failed = true
                events.removeAll(keepingCapacity: true)
                throw Self.error(Int32(n))
            }
            guard n > 0, let data else {
                // Nothing more to send: what `want_write` would say until the next call that
                // can queue frames (each sets the wish unknown), without asking it again.
                sendWish = false
                break
            }
            sink(UnsafeRawBufferPointer(start: data, count: n))
            sent += n
        }
        return takeEvents()
    }

    // MARK: - PING answers

    /// A PING's payload (an answer is due): held until the connection's next frames go out, so
    /// that the answer rides in their write (one write and one wakeup of the peer, not two: a
    /// gRPC runtime's flow-control PING comes with nearly every call), or until
    /// ``releasePingAnswers()`` (the connection's timer: the answer waits at most that long).
    /// A few held are queued at once (then nghttp2's guard against a peer that sends PINGs and
    /// never reads their answers counts them, as it counts the answers it queues itself).
    /// False when nghttp2 refused the answers as a flood: decoding stops there, and the
    /// receive fails as nghttp2's own answers would have made it fail.
    func holdPingAnswer(_ payload: UInt64) -> Bool {
        heldPingAnswers.append(payload)
        guard heldPingAnswers.count >= Self.heldPingAnswerLimit else { return true }
        guard submitHeldPingAnswers() == NGHTTP2_ERR_FLOODED.rawValue else { return true }
        pingAnswerError = NGHTTP2_ERR_FLOODED.rawValue
        return false
    }

    /// Why nghttp2 refused a PING answer during a receive (a flood: the codec failed), if it did.
    private var pingAnswerError: Int32 = 0

    /// Whether PING answers wait for the connection's next frames (its owner arms a timer).
    public var holdsPingAnswers: Bool { !heldPingAnswers.isEmpty }

    /// The held PING answers go with the next ``send(limit:into:)``, whatever else it carries.
    public func releasePingAnswers() {
        guard !heldPingAnswers.isEmpty else { return }
        pingAnswersReleased = true
        sendWish = nil
    }

    /// Queues the held answers; 0, or nghttp2's error for the first it refused
    /// (`NGHTTP2_ERR_FLOODED`: too many answers wait for a peer that does not read; any other:
    /// the session is ending, and answers no longer go).
    private func submitHeldPingAnswers() -> Int32 {
        sendWish = nil
        var failure: Int32 = 0
        for payload in heldPingAnswers where failure == 0 {
            failure = withUnsafeBytes(of: payload) { bytes in
                nghttp2_submit_ping(session, UInt8(NGHTTP2_FLAG_ACK.rawValue), bytes.baseAddress?.assumingMemoryBound(to: UInt8.self))
            }
        }
        heldPingAnswers.removeAll(keepingCapacity: true)
        pingAnswersReleased = false
        return failure
    }

    /// PING payloads whose answers wait (``holdPingAnswer(_:)``).
    private var heldPingAnswers: [UInt64] = []
    /// The held answers go with the next send.
    private var pingAnswersReleased = false
    /// PING answers held at most: then they are queued (a peer that pings without pause gets
    /// its answers as nghttp2 would give them, and nghttp2's flood guard sees them).
    static let heldPingAnswerLimit = 4
    /// How long a PING answer waits for frames to ride with, at most.
    public static let pingAnswerDelay = Duration.milliseconds(1)

    /// Whether frames wait to be sent (``send(limit:into:)`` stopped at its limit, or the
    /// windows just opened).
    public var wantsToSend: Bool {
        if let known = sendWish { return known }
        let wants = nghttp2_session_want_write(session) != 0 || pingAnswersReleased
        sendWish = wants
        return wants
    }

    /// What nghttp2 last said of wanting to send, until a call that can change it (every call
    /// here that decodes, queues or sends, each setting it unknown): a connection asks several
    /// times per turn, and each answer cost about 75 instructions. nghttp2 changes its queues
    /// only within such calls (it has no timers), so the answer holds until the next one.
    private var sendWish: Bool?

    /// Whether the connection still has a use: streams open, or frames to read or send. False
    /// after a `GOAWAY` both ways once the last stream closed, or after a fatal error.
    public var isActive: Bool {
        !failed && (nghttp2_session_want_read(session) != 0 || wantsToSend)
    }

    /// The connection reads nothing more: the `GOAWAY` of an error nghttp2 found in what the
    /// peer sent has gone out, or a `GOAWAY` went and no stream is left. Streams the same bytes
    /// opened are not to be served.
    public var isTerminating: Bool { nghttp2_session_want_read(session) == 0 }

    /// A fatal error happened: only the `GOAWAY` nghttp2 may have queued is left to send.
    private(set) var failed = false

    /// The peer's `SETTINGS_MAX_CONCURRENT_STREAMS` (100 until its settings arrive).
    public var peerMaxConcurrentStreams: Int {
        Int(nghttp2_session_get_remote_settings(session, NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS))
    }

    /// The highest stream id the peer opened and this side took (for a `GOAWAY`).
    public var lastPeerStream: Int32 { nghttp2_session_get_last_proc_stream_id(session) }

    /// The window each stream of the peer starts with (its `SETTINGS_INITIAL_WINDOW_SIZE`): what
    /// may be sent on a stream before the peer opens it further.
    public var peerInitialWindowSize: Int {
        Int(nghttp2_session_get_remote_settings(session, NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE))
    }

    // MARK: - messages out

    /// Whether a `HEADERS` or `DATA` frame went to the peer since the last call. A `PING` that
    /// follows such a frame is flow control (gRPC runtimes measure the bandwidth-delay product
    /// with one after the `DATA` they receive), not a flood: grpc-go's own server counts a ping
    /// as abuse only when it sent neither since the previous one.
    public func takeMessageFrameSent() -> Bool {
        defer { messageFrameSent = false }
        return messageFrameSent
    }

    /// Opens a stream with a request head (client only); returns its id. `endStream`: there is
    /// no body; otherwise ``sendBody(stream:_:)`` and ``endBody(stream:trailers:)`` follow.
    public func submitRequest(_ head: HTTP2Head, endStream: Bool) throws(HTTP2CodecError) -> Int32 {
        try openStream(endStream: endStream) { submit in withNameValues(head, submit) }
    }

    /// ``submitRequest(_:endStream:)`` for a head handed over as it is rewritten: its four
    /// pseudo-header values given, its regular fields written by `write` as the pairs nghttp2
    /// takes (``RequestFieldPairs``: a kept line of the app's head by reference, what would not
    /// outlive the call copied into storage the codec keeps — at most `copyBytes` bytes; writing
    /// more stops the process: a bound is a bug, not input). No ``HTTP2Head`` is made and no kept
    /// field is copied here: nghttp2 copies each pair as it takes the head (a head made of the
    /// rewrite and read back cost ~2k instructions of a gRPC call, a copy of each field into
    /// the codec's storage ~150 a field). `write` writes no connection-specific field (RFC 9113
    /// §8.2.2; `te` only as `trailers`): the rewrite drops them as it writes, so they are not
    /// looked for again (asserted in debug builds).
    public func submitRequest(method: String, scheme: String, authority: String, path: String, copyBytes: Int,
                              endStream: Bool, write: (inout RequestFieldPairs) -> Void) throws(HTTP2CodecError) -> Int32 {
        if requestCopies.count < copyBytes {
            requestCopies.deallocate()
            requestCopies = .allocate(byteCount: max(copyBytes, Self.requestCopiesFloor), alignment: 1)
        }
        defer {
            // A codec lives as long as its connection: storage one large head needed is not kept.
            if requestCopies.count > Self.requestCopiesKept {
                requestCopies.deallocate()
                requestCopies = .allocate(byteCount: Self.requestCopiesFloor, alignment: 1)
            }
        }
        return try openStream(endStream: endStream) { submit in
            withRequestNameValues(method: method, scheme: scheme, authority: authority, path: path, {
                var pairs = RequestFieldPairs(pairs: nameValues, copies: requestCopies)
                write(&pairs)
            }, submit)
        }
    }

    /// Opens a stream with the name/value pairs `withPairs` hands its argument (client only);
    /// returns its id. `endStream`: there is no body.
    @inline(__always)
    private func openStream(endStream: Bool,
                            _ withPairs: ((UnsafeBufferPointer<nghttp2_nv>) -> Int32) -> Int32) throws(HTTP2CodecError) -> Int32 {
        sendWish = nil
        let id = withPairs { nva in
            if endStream { return nghttp2_submit_request(session, nil, nva.baseAddress, nva.count, nil, nil) }
            var provider = HTTP2Callbacks.bodyProvider
            return nghttp2_submit_request(session, nil, nva.baseAddress, nva.count, &provider, nil)
        }
        if id < 0 { throw Self.error(id) }
        messageFrameSent = true
        if !endStream { outbound[id] = outboundBody() }
        return id
    }

    /// Storage for the fields a request rewrite copies
    /// (``submitRequest(method:scheme:authority:path:copyBytes:endStream:write:)``); never empty.
    private var requestCopies = UnsafeMutableRawBufferPointer.allocate(byteCount: HTTP2Codec.requestCopiesFloor, alignment: 1)
    /// The least room made for them, and the most kept between requests.
    private static let requestCopiesFloor = 512, requestCopiesKept = 8 * 1024

    /// Sends a response head on `stream` (server only); interim (1xx) heads may come first.
    /// `endStream`: there is no body; otherwise ``sendBody(stream:_:)`` and
    /// ``endBody(stream:trailers:)`` follow.
    public func submitResponse(stream: Int32, _ head: HTTP2Head, endStream: Bool) throws(HTTP2CodecError) {
        let status = head.status ?? 200
        try withNameValues(head) { nva throws(HTTP2CodecError) in
            try submitResponse(stream: stream, interim: status < 200, nva, endStream: endStream)
        }
    }

    /// Sends a response head on `stream` (server only) whose fields are an HTTP/1.1 field
    /// section read in place (its names lowercased, RFC 9113's connection-specific fields and
    /// `omitting` left out): no String per field. Otherwise as
    /// ``submitResponse(stream:_:endStream:)``.
    public func submitResponse(stream: Int32, status: Int, fields section: FieldSectionView, omitting: StaticString? = nil,
                               endStream: Bool) throws(HTTP2CodecError) {
        try withNameValues(status: status, section, omitting: omitting) { nva throws(HTTP2CodecError) in
            try submitResponse(stream: stream, interim: status < 200, nva, endStream: endStream)
        }
    }

    private func submitResponse(stream: Int32, interim: Bool, _ nva: UnsafeBufferPointer<nghttp2_nv>,
                                endStream: Bool) throws(HTTP2CodecError) {
        sendWish = nil
        let result: Int32
        if interim {
            result = nghttp2_submit_headers(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), stream, nil, nva.baseAddress, nva.count, nil)
        } else if endStream {
            result = nghttp2_submit_response(session, stream, nva.baseAddress, nva.count, nil)
        } else {
            var provider = HTTP2Callbacks.bodyProvider
            result = nghttp2_submit_response(session, stream, nva.baseAddress, nva.count, &provider)
        }
        if result < 0 { throw Self.error(result) }
        messageFrameSent = true
        if !interim && !endStream { outbound[stream] = outboundBody() }
    }

    /// Queues body bytes on `stream` (after its head); they go out as the peer's windows allow.
    public func sendBody(stream: Int32, _ bytes: UnsafeRawBufferPointer) {
        guard !bytes.isEmpty, let body = outbound.unretainedValue(for: stream) else { return }
        body._withUnsafeGuaranteedRef { $0.append(bytes) }
        sendWish = nil
        nghttp2_session_resume_data(session, stream)
    }

    /// Ends `stream`'s body, with `trailers` after it when there are any.
    public func endBody(stream: Int32, trailers: HTTPFields? = nil) {
        let kept = trailers?.isEmpty == false ? trailers : nil
        guard let body = outbound.unretainedValue(for: stream) else { return }
        body._withUnsafeGuaranteedRef { $0.end(trailers: kept) }
        sendWish = nil
        nghttp2_session_resume_data(session, stream)
    }

    /// Body bytes queued on `stream` and not yet framed (waiting for the peer's windows).
    public func bufferedBody(stream: Int32) -> Int { outbound.unretainedValue(for: stream)?._withUnsafeGuaranteedRef { $0.count } ?? 0 }

    /// How many more body bytes to queue on `stream` now: what the peer's windows (the
    /// stream's and the connection's) let go out, at most `limit`, less what is queued already.
    /// A peer that keeps its windows closed gets nothing queued here: the bytes wait where they
    /// come from, under that side's own limits (and its timeouts see them wait).
    ///
    /// A request stream whose HEADERS have not gone out yet (nghttp2 opens a stream only as it
    /// sends its head) has the peer's initial window: its first body bytes, and its end, go in
    /// the same write as its head, not in a later turn after it.
    public func sendRoom(stream: Int32, limit: Int) -> Int {
        var streamWindow = Int(nghttp2_session_get_stream_remote_window_size(session, stream))
        if streamWindow < 0 && outbound.unretainedValue(for: stream) != nil {
            streamWindow = Int(nghttp2_session_get_remote_settings(session, NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE))
        }
        let window = min(streamWindow, Int(nghttp2_session_get_remote_window_size(session)))
        return max(0, min(limit, window) - bufferedBody(stream: stream))
    }

    /// Whether `stream`'s body (or its end) has yet to go out.
    public func isSendingBody(stream: Int32) -> Bool { outbound.unretainedValue(for: stream) != nil }

    /// Resets `stream` with `code` (nothing more is sent or delivered for it).
    public func reset(stream: Int32, _ code: HTTP2ErrorCode) {
        if nghttp2_session_find_stream(session, stream) != nil {
            explainedResets.insert(stream)
        } else {
            // Not open (yet, or any more): nghttp2 calls no close back for a stream whose
            // HEADERS never went out (it opens a stream only as it sends them), so what was
            // queued for it (up to the peer's initial window: ``sendRoom(stream:limit:)``) goes
            // now, and no explanation waits for a close that never comes.
            retireOutbound(stream: stream)
        }
        sendWish = nil
        nghttp2_submit_rst_stream(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), stream, code.rawValue)
    }

    /// Sends `GOAWAY` with `code`: streams above `lastStream` (by default the last one the codec
    /// took) are not processed; the connection ends once the open ones close (``isActive``).
    public func goAway(_ code: HTTP2ErrorCode, lastStream: Int32? = nil) {
        sendWish = nil
        nghttp2_submit_goaway(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), lastStream ?? lastPeerStream, code.rawValue, nil, 0)
    }

    /// Sends a `PING` (its payload zero): the peer's answer shows the connection is alive.
    public func ping() {
        sendWish = nil
        nghttp2_submit_ping(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), nil)
    }

    /// Reports `count` bytes of `stream`'s DATA moved on: the windows reopen by as much.
    public func consumed(stream: Int32, count: Int) {
        guard count > 0 else { return }
        // A stream that is gone still has its bytes counted for the connection's window.
        sendWish = nil
        nghttp2_session_consume(session, stream, count)
    }

    // MARK: - for the callbacks

    /// A header block began on `stream`.
    func beginHead(stream: Int32) {
        blockStream = stream
        // The block is a spare (or a new head) that the last finished block left in its place:
        // emptied, not replaced (a replaced head, even an empty one, is seven releases).
        block.clear()
        blockBytesLeft = settings.maxHeaderListSize
        blockFieldsLeft = settings.maxHeaderFields
        if oversizedStream == stream { oversizedStream = 0 }
    }

    /// Adds a decoded field to `stream`'s block (its bytes valid during the call), counting
    /// `name + value + 32` (RFC 9113's accounting) against the limits: past them the block is
    /// dropped (and reported when it ends).
    func addField(stream: Int32, name: UnsafeBufferPointer<UInt8>, value: UnsafeBufferPointer<UInt8>) {
        guard stream == blockStream else { return }
        blockBytesLeft -= name.count + value.count + 32
        blockFieldsLeft -= 1
        guard blockBytesLeft >= 0, blockFieldsLeft >= 0 else {
            blockStream = 0
            block = HTTP2Head()
            oversizedStream = stream
            return
        }
        block.add(name: name, value: value, recent: &recentValues)
    }

    /// The `:authority` and `:path` of the last request head received (their Strings serve the
    /// next head with the same bytes), if short: kept for the connection's life, so one long
    /// value (nghttp2 bounds it only by the header list size) does not stay with an idle
    /// connection.
    private var recentValues = HTTP2Head.RecentValues()

    /// The last trailer section received and its fields (the next, if the same, takes them).
    private var recentTrailers = RecentTrailers()

    /// A received head the consumer is done with: its storage takes a next stream's fields
    /// (two allocations and frees fewer per stream). A few are kept, only small ones
    /// (``HTTP2Head/isSmall``, which counts a `:path` too: it may be 64 KiB). It is emptied when
    /// reused, not here: the consumer's event may still share its arrays now, and emptying
    /// shared storage copies it.
    public func recycle(head: consuming HTTP2Head) {
        guard head.isSmall, !spareHeads.isFull else { return }
        spareHeads.keep(head)
    }

    /// The most spares of one kind kept (heads or body queues).
    public var spareCount: Int { max(spareHeads.count, spareBodies.count) }

    /// Lets all but `count` of each kind of spare go (the connection has no stream open).
    public func trimSpares(to count: Int) {
        spareHeads.trim(to: count)
        spareBodies.trim(to: count)
        spareData.trim(to: count)
    }

    /// Heads kept for their storage (``recycle(head:)``).
    private var spareHeads = SpareList<HTTP2Head>(limit: HTTP2Codec.spareHeadLimit)
    /// Heads kept, at most: a read often decodes several streams' heads before the consumer
    /// hands the first back (h2load's 10 streams a connection come in one read; a gRPC app's
    /// 50 calls in flight on one connection, and their 50 answers on the shared upstream one,
    /// do too: with 16 kept, two heads in three of such a read were made and freed anew, about
    /// 1k instructions a call). A usual head kept is about half a KiB (64: 32 KiB); an idle
    /// connection keeps fewer (``trimSpares(to:)``).
    static let spareHeadLimit = 64

    /// A header block on `stream` is complete: a head or trailers, by what it holds.
    func finishHead(stream: Int32, endStream: Bool) {
        if oversizedStream == stream {
            oversizedStream = 0
            emit(.headTooLarge(stream: stream))
            return
        }
        guard blockStream == stream else { return }
        blockStream = 0
        // (Moved out of the block, not copied from it; a spare, emptied when the next block
        // begins, takes its place.)
        var head = spareHeads.take() ?? HTTP2Head()
        swap(&head, &block)
        if head.method != nil || head.status != nil {
            emit(.head(stream: stream, consume head))
        } else {
            emit(.trailers(stream: stream, recentTrailers.fields(of: head)))
            recycle(head: consume head)
        }
        if endStream { emit(.end(stream: stream)) }
    }

    /// `stream` closed.
    func streamClosed(_ stream: Int32, code: UInt32) {
        // A content-length that disagrees with the DATA is refused without an invalid-frame
        // callback, and so are frames on a stream that has ended (`STREAM_CLOSED`) or beyond its
        // window: told here, unless the reset is already explained (by the peer, the consumer
        // or the invalid-frame callback).
        // (`REFUSED_STREAM` is this side's own choice: the streams above a GOAWAY's last one.)
        // (Most streams end cleanly with nothing explained: the set is not looked up for them.)
        let explained = !explainedResets.isEmpty && explainedResets.remove(stream) != nil
        if !explained, code != HTTP2ErrorCode.noError.rawValue,
           code != HTTP2ErrorCode.refusedStream.rawValue {
            emit(code == HTTP2ErrorCode.protocolError.rawValue ? .malformed(stream: stream) : .provokedReset(stream: stream))
        }
        if blockStream == stream {
            blockStream = 0
            block = HTTP2Head()
        }
        if oversizedStream == stream { oversizedStream = 0 }
        retireOutbound(stream: stream)
        emit(.closed(stream: stream, HTTP2ErrorCode(rawValue: code)))
    }

    // MARK: - helpers

    /// A `GOAWAY` frame, for a connection whose session failed before it could queue one.
    public static func goAwayFrame(lastStream: Int32, _ code: HTTP2ErrorCode) -> [UInt8] {
        func word(_ value: UInt32) -> [UInt8] { [UInt8(value >> 24), UInt8(value >> 16 & 0xff), UInt8(value >> 8 & 0xff), UInt8(value & 0xff)] }
        // Length 8, type GOAWAY (7), no flags, stream 0; then the last stream and the code.
        return [0, 0, 8, 7, 0, 0, 0, 0, 0] + word(UInt32(max(lastStream, 0))) + word(code.rawValue)
    }

    static func error(_ code: Int32) -> HTTP2CodecError {
        HTTP2CodecError(code: code, message: String(cString: nghttp2_strerror(code)))
    }

    /// Calls `body` with `head` as nghttp2 name/value pairs: pseudo-header fields first, in
    /// RFC 9113 §8.3's order, then the regular fields (nghttp2 lowercases the names as it copies them), without what
    /// HTTP/2 forbids (RFC 9113 §8.2.2: connection-specific fields, those `Connection` names, and
    /// `te` but for `trailers`) — so an HTTP/1.1 head can be passed as it is. nghttp2 copies them
    /// during the call. The bytes go into buffers the codec keeps from call to call: a response
    /// head costs no allocation here.
    func withNameValues<R, E: Error>(_ head: HTTP2Head, _ body: (UnsafeBufferPointer<nghttp2_nv>) throws(E) -> R) throws(E) -> R {
        if head.status == nil, head.extendedProtocol == nil, head.method != nil, head.scheme != nil,
           head.authority != nil, head.path != nil {
            return try withRequestNameValues(head, body)
        }
        nameValueBytes.removeAll(keepingCapacity: true)
        nameValueEnds.removeAll(keepingCapacity: true)
        // A response head's status from the constant table, as a section's (``statusPair(_:)``).
        let statusPair = head.status.flatMap(Self.statusPair)
        if let status = head.status, statusPair == nil { addField(":status", status: status) }
        if let method = head.method { addField(":method", method) }
        if let scheme = head.scheme { addField(":scheme", scheme) }
        if let authority = head.authority { addField(":authority", authority) }
        if let path = head.path { addField(":path", path) }
        if let extendedProtocol = head.extendedProtocol { addField(":protocol", extendedProtocol) }
        // Most heads name nothing in `Connection` but `keep-alive` or `close`.
        let named = head.hasField("connection") ? head.fields.connectionOptions() : []
        // The regular fields go as the head keeps them, not copied here (nghttp2 copies each
        // pair as it takes the head): only the pseudo-header fields, made from Strings, are.
        return try head.withFieldStorage { (fieldBytes, fieldEnds) throws(E) -> R in
            try nameValueBytes.withUnsafeMutableBufferPointer { (pseudoBytes) throws(E) -> R in
                nameValues.removeAll()
                if let statusPair { nameValues.append(statusPair) }
                let pseudoBase = pseudoBytes.baseAddress ?? UnsafeMutablePointer<UInt8>(bitPattern: 1)!
                var start = 0
                for (nameEnd, valueEnd) in nameValueEnds {
                    nameValues.append(Self.pair(name: pseudoBase + start, count: nameEnd - start, value: pseudoBase + nameEnd,
                                                count: valueEnd - nameEnd))
                    start = valueEnd
                }
                appendRegular(fieldBytes, fieldEnds, named: named)
                return try nameValues.withPairs(body)
            }
        }
    }

    /// ``withNameValues(_:_:)`` for a request head with its four pseudo-header fields (any
    /// request but a CONNECT): their values read in place from the Strings, their names
    /// constants nghttp2 does not copy, nothing copied here (four copies cost ~1.3k instructions
    /// of every request sent upstream).
    private func withRequestNameValues<R, E: Error>(_ head: HTTP2Head,
                                                    _ body: (UnsafeBufferPointer<nghttp2_nv>) throws(E) -> R) throws(E) -> R {
        let named = head.hasField("connection") ? head.fields.connectionOptions() : []
        return try head.withFieldStorage { (fieldBytes, fieldEnds) throws(E) -> R in
            try withRequestNameValues(method: head.method!, scheme: head.scheme!, authority: head.authority!, path: head.path!,
                                      { appendRegular(fieldBytes, fieldEnds, named: named) }, body)
        }
    }

    /// ``withRequestNameValues(_:_:)`` of the parts: the four pseudo-header values, then what
    /// `regular` appends to ``nameValues``.
    private func withRequestNameValues<R, E: Error>(method: String, scheme: String, authority: String, path: String,
                                                    _ regular: () -> Void,
                                                    _ body: (UnsafeBufferPointer<nghttp2_nv>) throws(E) -> R) throws(E) -> R {
        // The four values read in place from the Strings (a `var` copy of each, for
        // `withUTF8`, cost ~600 instructions a request). (A Result out of the closures.)
        let result: Result<R, E> = method.withUTF8InPlace { method in
            scheme.withUTF8InPlace { scheme in
                authority.withUTF8InPlace { authority in
                    path.withUTF8InPlace { path in
                        nameValues.removeAll()
                        nameValues.append(Self.pseudo(":method", method))
                        nameValues.append(Self.pseudo(":scheme", scheme))
                        nameValues.append(Self.pseudo(":authority", authority))
                        nameValues.append(Self.pseudo(":path", path))
                        regular()
                        return Result { () throws(E) -> R in try nameValues.withPairs(body) }
                    }
                }
            }
        }
        return try result.get()
    }

    /// A pseudo-header field for nghttp2: its name a constant (not copied), its value `value`
    /// (copied during the submit call).
    @inline(__always)
    private static func pseudo(_ name: StaticString, _ value: UnsafeBufferPointer<UInt8>) -> nghttp2_nv {
        nghttp2_nv(name: UnsafeMutablePointer(mutating: name.utf8Start),
                   value: UnsafeMutablePointer(mutating: value.baseAddress ?? UnsafePointer(name.utf8Start)),
                   namelen: name.utf8CodeUnitCount, valuelen: value.count, flags: UInt8(NGHTTP2_NV_FLAG_NO_COPY_NAME.rawValue))
    }

    /// Appends a head's regular fields (its storage, ``HTTP2Head/withFieldStorage(_:)``) to
    /// ``nameValues`` as pairs pointing into it, but the connection-specific ones.
    private func appendRegular(_ fieldBytes: UnsafeBufferPointer<UInt8>, _ fieldEnds: UnsafeBufferPointer<Int>, named: [String]) {
        let base = UnsafeMutablePointer(mutating: fieldBytes.baseAddress ?? UnsafePointer<UInt8>(bitPattern: 1)!)
        var start = 0
        var index = 0
        while index < fieldEnds.count {
            let nameEnd = fieldEnds[index], valueEnd = fieldEnds[index + 1]
            let name = UnsafeRawBufferPointer(start: base + start, count: nameEnd - start)
            let value = UnsafeRawBufferPointer(start: base + nameEnd, count: valueEnd - nameEnd)
            if !Self.isConnectionSpecific(name: name, value: value, named: named) {
                nameValues.append(Self.pair(name: base + start, count: nameEnd - start, value: base + nameEnd,
                                            count: valueEnd - nameEnd))
            }
            start = valueEnd
            index += 2
        }
    }

    /// ``withNameValues(_:_:)`` for a trailer section: `trailers` read as they are, each name and
    /// value copied once (an ``HTTP2Head`` made of them first copied each twice: two thousand
    /// instructions of a gRPC call, whose status is in its trailers).
    ///
    /// The same section again (the same array: a server's calls end with the same trailers,
    /// `grpc-status: 0`, which ``RecentTrailers`` hands on as one array) takes the bytes the
    /// last one was copied into as they are (~450 instructions of a gRPC call).
    func withNameValues<R, E: Error>(trailers: HTTPFields, _ body: (UnsafeBufferPointer<nghttp2_nv>) throws(E) -> R) throws(E) -> R {
        if let last = lastTrailers, Self.sameStorage(last, trailers) {
            return try withCollectedNameValues(trailerBytes, trailerEnds, body)
        }
        trailerBytes.removeAll(keepingCapacity: true)
        trailerEnds.removeAll(keepingCapacity: true)
        let named = trailers.connectionOptions()
        for field in trailers {
            // (Read in place: a `var` copy of each String for `withUTF8` is a retain and a release.)
            field.name.withUTF8InPlace { name in
                field.value.withUTF8InPlace { value in
                    let nameBytes = UnsafeRawBufferPointer(name), valueBytes = UnsafeRawBufferPointer(value)
                    guard !Self.isConnectionSpecific(name: nameBytes, value: valueBytes, named: named) else { return }
                    trailerBytes.append(contentsOf: name)
                    let nameEnd = trailerBytes.count
                    trailerBytes.append(contentsOf: value)
                    trailerEnds.append((nameEnd, trailerBytes.count))
                }
            }
        }
        // Kept only if small (a codec lives as long as its connection).
        lastTrailers = trailerBytes.count <= RecentTrailers.limit ? trailers : nil
        defer {
            if lastTrailers == nil && trailerBytes.capacity > 4 * RecentTrailers.limit {
                trailerBytes = []
                trailerEnds = []
            }
        }
        return try withCollectedNameValues(trailerBytes, trailerEnds, body)
    }

    /// Whether `a` and `b` hold their fields in the same array storage, hence the same fields
    /// (held by ``lastTrailers``, the storage is neither freed nor changed in place).
    private static func sameStorage(_ a: HTTPFields, _ b: HTTPFields) -> Bool {
        a.fields.withUnsafeBufferPointer { x in
            b.fields.withUnsafeBufferPointer { y in x.baseAddress == y.baseAddress && x.count == y.count }
        }
    }

    /// The last trailer section handed over (small ones only), and its names and values as
    /// they were copied for nghttp2 (``withNameValues(trailers:_:)``).
    private var lastTrailers: HTTPFields?
    private var trailerBytes: [UInt8] = []
    private var trailerEnds: [(name: Int, value: Int)] = []

    /// ``withNameValues(_:_:)`` for a response head with `status` and the fields of `section`
    /// (read in place; `omitting` is left out too).
    func withNameValues<R, E: Error>(status: Int, _ section: FieldSectionView, omitting: StaticString?,
                                     _ body: (UnsafeBufferPointer<nghttp2_nv>) throws(E) -> R) throws(E) -> R {
        // (The status from a constant table: three digits written and copied for each response
        // cost ~250 instructions of one.)
        guard let statusPair = Self.statusPair(status) else {
            nameValueBytes.removeAll(keepingCapacity: true)
            nameValueEnds.removeAll(keepingCapacity: true)
            addField(":status", status: status)
            return try nameValueBytes.withUnsafeMutableBufferPointer { (statusBytes) throws(E) -> R in
                let statusBase = statusBytes.baseAddress ?? UnsafeMutablePointer<UInt8>(bitPattern: 1)!
                let statusEnd = nameValueEnds[0]
                return try withNameValues(Self.pair(name: statusBase, count: statusEnd.name, value: statusBase + statusEnd.name,
                                                    count: statusEnd.value - statusEnd.name), section, omitting: omitting, body)
            }
        }
        return try withNameValues(statusPair, section, omitting: omitting, body)
    }

    /// ``withNameValues(status:_:omitting:_:)`` with the status's pair made.
    @inline(__always)
    private func withNameValues<R, E: Error>(_ statusPair: nghttp2_nv, _ section: FieldSectionView, omitting: StaticString?,
                                             _ body: (UnsafeBufferPointer<nghttp2_nv>) throws(E) -> R) throws(E) -> R {
        nameValues.removeAll()
        nameValues.append(statusPair)
        // The section's own bytes, not copied here: nghttp2 copies each pair as it takes
        // the head, and lowercases the names it copies (`nghttp2_submit_response`); a
        // common name goes as a lowercase constant instead (``pair(name:count:value:count:)``).
        guard let sectionBase = section.bytes.baseAddress else { return try nameValues.withPairs(body) }
        let named = section.connectionOptions()
        let base = UnsafeMutablePointer(mutating: sectionBase.assumingMemoryBound(to: UInt8.self))
        for line in section.lines where !Self.isConnectionSpecific(line, in: section, named: named) {
            if let omitting, section.name(of: line, equals: omitting) { continue }
            nameValues.append(Self.pair(name: base + line.name.lowerBound, count: line.name.count,
                                        value: base + line.value.lowerBound, count: line.value.count))
        }
        return try nameValues.withPairs(body)
    }

    /// `:status` with a value from ``statusDigits`` (a constant: neither side copies it), for
    /// a status of three digits.
    @inline(__always)
    private static func statusPair(_ status: Int) -> nghttp2_nv? {
        guard status >= 100 && status <= 999 else { return nil }
        let name: StaticString = ":status"
        return nghttp2_nv(name: UnsafeMutablePointer(mutating: name.utf8Start),
                          value: UnsafeMutablePointer(mutating: statusDigits + (status - 100) * 3),
                          namelen: name.utf8CodeUnitCount, valuelen: 3,
                          flags: UInt8(NGHTTP2_NV_FLAG_NO_COPY_NAME.rawValue | NGHTTP2_NV_FLAG_NO_COPY_VALUE.rawValue))
    }

    /// The statuses 100 to 999 as text, three digits each, back to back: made once, never
    /// freed or written again (so shared by every loop's codecs).
    nonisolated(unsafe) private static let statusDigits: UnsafePointer<UInt8> = {
        let digits = UnsafeMutablePointer<UInt8>.allocate(capacity: 900 * 3)
        for status in 100...999 {
            let at = digits + (status - 100) * 3
            at[0] = UInt8(0x30 + status / 100)
            at[1] = UInt8(0x30 + status / 10 % 10)
            at[2] = UInt8(0x30 + status % 10)
        }
        return UnsafePointer(digits)
    }()

    /// Calls `body` with the fields `bytes` holds, ending where `ends` say, as nghttp2
    /// name/value pairs.
    private func withCollectedNameValues<R, E: Error>(_ bytes: [UInt8], _ ends: [(name: Int, value: Int)],
                                                      _ body: (UnsafeBufferPointer<nghttp2_nv>) throws(E) -> R) throws(E) -> R {
        try bytes.withUnsafeBufferPointer { (bytes) throws(E) -> R in
            // (nghttp2 takes `char *`: it copies the pairs and never writes through them.)
            let base = UnsafeMutablePointer(mutating: bytes.baseAddress ?? UnsafePointer<UInt8>(bitPattern: 1)!)
            nameValues.removeAll()
            var start = 0
            for (nameEnd, valueEnd) in ends {
                nameValues.append(Self.pair(name: base + start, count: nameEnd - start, value: base + nameEnd,
                                            count: valueEnd - nameEnd))
                start = valueEnd
            }
            return try nameValues.withPairs(body)
        }
    }

    /// A name/value pair for nghttp2, which copies both as it takes a head (they need to last
    /// only through the `nghttp2_submit_*` call), except a common name (``CommonFieldNames``):
    /// that one is a lowercase constant, handed over as it is. A value that changes with every
    /// request (``UnindexedFields``) is kept out of the HPACK table.
    @inline(__always)
    static func pair(name: UnsafeMutablePointer<UInt8>, count nameCount: Int,
                     value: UnsafeMutablePointer<UInt8>, count valueCount: Int) -> nghttp2_nv {
        let nameBytes = UnsafeRawBufferPointer(start: name, count: nameCount)
        if let common = CommonFieldNames.lowercase(nameBytes) {
            return nghttp2_nv(name: UnsafeMutablePointer(mutating: common.utf8Start), value: value, namelen: nameCount,
                              valuelen: valueCount, flags: UInt8(NGHTTP2_NV_FLAG_NO_COPY_NAME.rawValue))
        }
        let unindexed = UnindexedFields.contains(name: nameBytes)
        return nghttp2_nv(name: name, value: value, namelen: nameCount, valuelen: valueCount,
                          flags: UInt8(unindexed ? NGHTTP2_NV_FLAG_NO_INDEX.rawValue : NGHTTP2_NV_FLAG_NONE.rawValue))
    }

    /// Where each field's name and value end in ``nameValueBytes``.
    private var nameValueEnds: [(name: Int, value: Int)] = []
    /// The names and values of the head being handed to nghttp2, back to back.
    private var nameValueBytes: [UInt8] = []
    /// The pairs of the head being handed to nghttp2 (a `let`: a look through a `var` retains it).
    private let nameValues = NameValueList()

    /// Whether `field` may not be sent over HTTP/2 (RFC 9113 §8.2.2); `named`: what the head's
    /// `Connection` names.
    static func isConnectionSpecific(name: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer, named: [String]) -> Bool {
        switch connectionSpecific(nameLength: name.count, nameIs: { equalsIgnoringCase(name, $0) }) {
        case .forbidden: return true
        case .forbiddenUnlessTrailers: return !equalsIgnoringCase(value, "trailers")
        case .allowed:
            // (`named` is lowercase, and rarely anything.)
            return !named.isEmpty && named.contains(String(decoding: name, as: UTF8.self).lowercased())
        }
    }

    /// ``isConnectionSpecific(name:value:named:)`` for a line of `section`; `named`: its
    /// `Connection` options.
    static func isConnectionSpecific(_ line: FieldLine, in section: FieldSectionView, named: [Range<Int>]) -> Bool {
        switch connectionSpecific(nameLength: line.name.count, nameIs: { section.name(of: line, equals: $0) }) {
        case .forbidden: return true
        case .forbiddenUnlessTrailers: return !equalsIgnoringCase(section.value(of: line), "trailers")
        case .allowed: return !named.isEmpty && section.name(of: line, isAmong: named)
        }
    }

    /// What RFC 9113 §8.2.2 says of a field by its name alone.
    enum NameRule {
        case allowed
        case forbidden
        /// `te`: only `trailers`.
        case forbiddenUnlessTrailers
    }

    /// The rule for a name `nameLength` bytes long that `nameIs` compares (ignoring case) with
    /// a lowercase name. By length first: most names are none of these, and a length is one
    /// load.
    @inline(__always)
    static func connectionSpecific(nameLength: Int, nameIs: (StaticString) -> Bool) -> NameRule {
        switch nameLength {
        case 2 where nameIs("te"): .forbiddenUnlessTrailers
        case 7 where nameIs("upgrade"): .forbidden
        case 10 where nameIs("connection") || nameIs("keep-alive"): .forbidden
        case 16 where nameIs("proxy-connection"): .forbidden
        case 17 where nameIs("transfer-encoding"): .forbidden
        default: .allowed
        }
    }

    /// Whether `bytes` are `lowercase` (a lowercase name) ignoring ASCII case: only letters
    /// fold, so no other byte stands in for another (`-` for CR, say).
    public static func equalsIgnoringCase(_ bytes: UnsafeRawBufferPointer, _ lowercase: StaticString) -> Bool {
        guard bytes.count == lowercase.utf8CodeUnitCount else { return false }
        for index in 0..<bytes.count {
            let byte = bytes[index], expected = lowercase.utf8Start[index]
            guard byte == expected || (byte | 0x20 == expected && expected >= 0x61 && expected <= 0x7A) else { return false }
        }
        return true
    }

    /// Appends a field (its name as it is: every `nghttp2_submit_*` lowercases the names it copies).
    private func addField(_ name: String, _ value: String) {
        nameValueBytes.appendUTF8(name)
        let nameEnd = nameValueBytes.count
        nameValueBytes.appendUTF8(value)
        nameValueEnds.append((nameEnd, nameValueBytes.count))
    }

    /// Appends `:status` written out: only for a status the constant table has not
    /// (``statusPair(_:)``: three digits), which neither parser lets through.
    private func addField(_ name: StaticString, status: Int) {
        nameValueBytes.append(contentsOf: UnsafeBufferPointer(start: name.utf8Start, count: name.utf8CodeUnitCount))
        let nameEnd = nameValueBytes.count
        nameValueBytes.appendDecimal(status)
        nameValueEnds.append((nameEnd, nameValueBytes.count))
    }
}
