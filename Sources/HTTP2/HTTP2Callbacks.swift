import CNghttp2
import HTTP1

/// nghttp2's callbacks into an ``HTTP2Codec`` (its `user_data`, unretained: the codec owns the
/// session and frees it in its deinit, so the session never outlives it).
enum HTTP2Callbacks {
    /// Installs every callback the codec uses on `callbacks`.
    static func install(on callbacks: OpaquePointer?) {
        nghttp2_session_callbacks_set_on_begin_headers_callback(callbacks) { _, frame, user in
            guard let frame, let user else { return 0 }
            withOwner(user) { $0.beginHead(stream: frame.pointee.hd.stream_id) }
            return 0
        }
        nghttp2_session_callbacks_set_on_header_callback(callbacks) { _, frame, name, nameLength, value, valueLength, _, user in
            guard let frame, let name, let value, let user else { return 0 }
            // nghttp2 advertises SETTINGS_MAX_HEADER_LIST_SIZE but does not enforce it: a few
            // bytes of HPACK can name a 4 KiB table entry again and again. Past the limit the
            // block is dropped (and decoding goes on at no cost to memory).
            // nghttp2 checked the name (lowercase token) and the value (no control character but
            // HTAB, no DEL, no whitespace around it) already.
            withOwner(user) {
                $0.addField(stream: frame.pointee.hd.stream_id, name: UnsafeBufferPointer(start: name, count: nameLength),
                            value: UnsafeBufferPointer(start: value, count: valueLength))
            }
            return 0
        }
        nghttp2_session_callbacks_set_on_frame_recv_callback(callbacks) { session, frame, user in
            guard let frame, let user else { return 0 }
            return withOwner(user) { codec -> Int32 in
                let header = frame.pointee.hd
                let endStream = header.flags & UInt8(NGHTTP2_FLAG_END_STREAM.rawValue) != 0
                switch UInt32(header.type) {
                case NGHTTP2_HEADERS.rawValue:
                    codec.finishHead(stream: header.stream_id, endStream: endStream)
                case NGHTTP2_DATA.rawValue:
                    if endStream {
                        codec.emit(.end(stream: header.stream_id))
                    } else if header.length == 0 {
                        codec.emit(.emptyData(stream: header.stream_id))
                    }
                case NGHTTP2_PING.rawValue where header.flags & UInt8(NGHTTP2_FLAG_ACK.rawValue) == 0:
                    // (Answered with the connection's next frames: ``HTTP2Codec/holdPingAnswer(_:)``.)
                    let payload = withUnsafeBytes(of: frame.pointee.ping.opaque_data) { $0.loadUnaligned(as: UInt64.self) }
                    guard codec.holdPingAnswer(payload) else { return NGHTTP2_ERR_CALLBACK_FAILURE.rawValue }
                    codec.emit(.ping)
                case NGHTTP2_RST_STREAM.rawValue:
                    codec.explainedResets.insert(header.stream_id)
                    codec.emit(.reset(stream: header.stream_id, HTTP2ErrorCode(rawValue: frame.pointee.rst_stream.error_code)))
                case NGHTTP2_GOAWAY.rawValue:
                    let goAway = frame.pointee.goaway
                    codec.emit(.goAway(lastStream: goAway.last_stream_id, HTTP2ErrorCode(rawValue: goAway.error_code)))
                case NGHTTP2_SETTINGS.rawValue where header.flags & UInt8(NGHTTP2_FLAG_ACK.rawValue) == 0:
                    let streams = nghttp2_session_get_remote_settings(session, NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS)
                    codec.emit(.settings(maxConcurrentStreams: Int(streams)))
                case NGHTTP2_SETTINGS.rawValue:
                    codec.emit(.settingsAcknowledged)
                default:
                    break
                }
                return 0
            }
        }
        nghttp2_session_callbacks_set_on_data_chunk_recv_callback(callbacks) { _, _, stream, data, length, user in
            guard let data, let user, length > 0 else { return 0 }
            withOwner(user) { $0.receiveData(stream: stream, UnsafeRawBufferPointer(start: data, count: length)) }
            return 0
        }
        nghttp2_session_callbacks_set_on_invalid_frame_recv_callback(callbacks) { session, frame, error, user in
            guard let frame, let user else { return 0 }
            // A malformed message (RFC 9113 §8.1.1) that nghttp2 refuses with a stream reset: told
            // as it is read, before any later stream of the same bytes, so that a budget on them
            // holds exactly. Connection errors end the session on their own.
            // Other stream errors are ones the peer provoked; a stream beyond the concurrency
            // limit is refused.
            let stream = frame.pointee.hd.stream_id
            guard stream != 0 else { return 0 }
            return withOwner(user) { codec -> Int32 in
                // Explained for its close, if it is open (a frame on a closed stream closes nothing:
                // remembering it would grow the set for nothing). Told once per stream.
                let isOpen = nghttp2_session_find_stream(session, stream) != nil
                if isOpen {
                    guard codec.explainedResets.insert(stream).inserted else { return 0 }
                }
                switch error {
                case NGHTTP2_ERR_HTTP_HEADER.rawValue, NGHTTP2_ERR_HTTP_MESSAGING.rawValue:
                    codec.emit(.malformed(stream: stream))
                case NGHTTP2_ERR_REFUSED_STREAM.rawValue:
                    codec.emit(.refusedStream(stream: stream))
                default:
                    // A frame for a stream that is not open is a connection error (or ignored):
                    // nothing of a stream is reset.
                    if isOpen { codec.emit(.provokedReset(stream: stream)) }
                }
                return 0
            }
        }
        nghttp2_session_callbacks_set_on_stream_close_callback(callbacks) { _, stream, code, user in
            guard let user else { return 0 }
            withOwner(user) { $0.streamClosed(stream, code: code) }
            return 0
        }
    }

    /// The data provider of every stream with a body: pulls from the codec's outbound queue.
    static var bodyProvider: nghttp2_data_provider {
        nghttp2_data_provider(source: nghttp2_data_source(ptr: nil)) { session, stream, buffer, length, flags, _, user in
            readBody(session, stream, buffer, length, flags, user)
        }
    }
}

/// Runs `body` with the codec a callback's `user_data` is, not retained for the call: the codec
/// is inside one of its own calls into nghttp2 (``HTTP2Codec/receive(_:)``, ``HTTP2Codec/send(limit:into:)``),
/// so it is alive throughout. Every callback reaches the codec this way (some run once per
/// header field: a retain and a release each otherwise).
@inline(__always)
private func withOwner<R>(_ user: UnsafeMutableRawPointer, _ body: (HTTP2Codec) -> R) -> R {
    Unmanaged<HTTP2Codec>.fromOpaque(user)._withUnsafeGuaranteedRef(body)
}

/// Fills one DATA frame of `stream` from its queue: deferred while the queue is empty and
/// the body not ended; the end sets `EOF` (and hands over the trailers, which then end the
/// stream instead of the DATA frame).
private func readBody(_ session: OpaquePointer?, _ stream: Int32, _ buffer: UnsafeMutablePointer<UInt8>?, _ length: Int,
                      _ flags: UnsafeMutablePointer<UInt32>?, _ user: UnsafeMutableRawPointer?) -> Int {
    guard let user, let buffer, let flags else { return Int(NGHTTP2_ERR_CALLBACK_FAILURE.rawValue) }
    return withOwner(user) { codec in readBody(codec, session, stream, buffer, length, flags) }
}

/// ``readBody(_:_:_:_:_:_:)`` for `codec`.
private func readBody(_ codec: HTTP2Codec, _ session: OpaquePointer?, _ stream: Int32, _ buffer: UnsafeMutablePointer<UInt8>,
                      _ length: Int, _ flags: UnsafeMutablePointer<UInt32>) -> Int {
    // (Read in place, and the trailers taken out, before the body leaves the table below.)
    let read = codec.outbound.unretainedValue(for: stream)?._withUnsafeGuaranteedRef { body -> (taken: Int, left: Bool, ended: Bool, trailers: HTTPFields?) in
        let n = body.take(into: UnsafeMutableRawBufferPointer(start: buffer, count: length))
        let left = body.count > 0
        return (n, left, body.ended, left || !body.ended ? nil : body.trailers)
    }
    guard let (n, left, ended, trailers) = read else { return Int(NGHTTP2_ERR_CALLBACK_FAILURE.rawValue) }
    // A DATA frame is made now (nghttp2 asks as it frames: the peer's windows allow it).
    if n > 0 || ended { codec.messageFrameSent = true }
    guard !left else { return n }
    guard ended else { return n > 0 ? n : Int(NGHTTP2_ERR_DEFERRED.rawValue) }
    flags.pointee |= NGHTTP2_DATA_FLAG_EOF.rawValue
    if let trailers {
        flags.pointee |= NGHTTP2_DATA_FLAG_NO_END_STREAM.rawValue
        let result = codec.withNameValues(trailers: trailers) { nva in
            nghttp2_submit_trailer(session, stream, nva.baseAddress, nva.count)
        }
        if result != 0 { return Int(NGHTTP2_ERR_CALLBACK_FAILURE.rawValue) }
    }
    codec.retireOutbound(stream: stream)
    return n
}
