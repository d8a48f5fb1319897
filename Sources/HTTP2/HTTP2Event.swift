import HTTP1

/// What the peer's bytes meant, per stream and for the connection: what ``HTTP2Codec/receive(_:)``
/// returns, in the order the frames arrived.
public enum HTTP2Event: Equatable, Sendable {
    /// A request head (server) or a response head, interim (1xx) or final (client).
    case head(stream: Int32, HTTP2Head)
    /// Body bytes of a stream. They count against the receive windows until the consumer says
    /// it moved them on (``HTTP2Codec/consumed(stream:count:)``).
    case data(stream: Int32, [UInt8])
    /// A header block of a stream went past ``HTTP2Settings/maxHeaderListSize`` or
    /// ``HTTP2Settings/maxHeaderFields`` (RFC 9113's accounting): it was not kept. The stream is
    /// still open; the consumer answers it (431) or resets it.
    case headTooLarge(stream: Int32)
    /// The peer sent a malformed message on a stream (RFC 9113 §8.1.1: a field name or value
    /// HTTP/2 forbids, pseudo-headers wrong, `content-length` against the DATA): the codec resets
    /// the stream with `PROTOCOL_ERROR` and nothing of it is delivered.
    case malformed(stream: Int32)
    /// The codec reset a stream because of a frame the peer sent on it (a zero `WINDOW_UPDATE`,
    /// `DATA` after its end, a window overrun…): a stream error the peer provoked (what
    /// MadeYouReset, CVE-2025-8671, uses to make a server reset streams whose work goes on).
    case provokedReset(stream: Int32)
    /// The codec refused a stream the peer opened beyond ``HTTP2Settings/maxConcurrentStreams``.
    case refusedStream(stream: Int32)
    /// An empty `DATA` frame that does not end its stream (nothing a peer needs to send; the
    /// empty-frames flood, CVE-2019-9518, sends them by the million).
    case emptyData(stream: Int32)
    /// A `PING` that asks for an answer (the codec answers it).
    case ping
    /// The peer acknowledged this side's `SETTINGS` (RFC 9113 §6.5.3).
    case settingsAcknowledged
    /// The trailer section of a stream.
    case trailers(stream: Int32, HTTPFields)
    /// The peer ended its side of the stream (`END_STREAM`): nothing more comes on it.
    case end(stream: Int32)
    /// The peer reset the stream (`RST_STREAM`).
    case reset(stream: Int32, HTTP2ErrorCode)
    /// A stream is closed in both directions, cleanly or not (`code` is not `NO_ERROR` when the
    /// stream was reset, by either side, or refused by the codec for a malformed message).
    case closed(stream: Int32, HTTP2ErrorCode)
    /// The peer is going away: streams above `lastStream` were not processed (and may be retried).
    case goAway(lastStream: Int32, HTTP2ErrorCode)
    /// The peer's settings arrived (or changed): how many streams it takes at once.
    case settings(maxConcurrentStreams: Int)

    /// Whether this is the end of `stream`'s request or response (read in place: matching an
    /// event held in a list copies its payload, a head's five strings and arrays).
    public func isEnd(of stream: Int32) -> Bool {
        if case .end(let ended) = self { return ended == stream }
        return false
    }

    /// The event at `index` of a list lent through its storage, moved out with a trivial event
    /// left in its place: a head is not copied (and released twice) on its way to its stream,
    /// and the list's uniqueness is not checked at each event (the sessions' event loops).
    @inlinable @inline(__always)
    public static func take(_ events: UnsafeMutableBufferPointer<HTTP2Event>, at index: Int) -> HTTP2Event {
        var event = HTTP2Event.settingsAcknowledged
        swap(&event, &events[index])
        return event
    }
}
