/// The fields whose values differ from one request to the next, which the codec sends as
/// literals nghttp2 keeps out of its HPACK table (`NGHTTP2_NV_FLAG_NO_INDEX`, RFC 7541 §6.2.3).
///
/// Indexed, each such value would be added to the connection's dynamic table and never be
/// used again: it evicts entries that would be (a `content-type`, a `user-agent`), and since
/// nghttp2 finds a field by its name and then compares the value of every entry of that name,
/// a table full of `grpc-timeout`s (about 50 fit in its 4 KiB) cost a gRPC call whose caller
/// sets a deadline, as every gRPC runtime does when told to, ~97 `memcmp`s and ~2,000
/// instructions. A value that is the same on every request is still indexed: sent once, then
/// as an index. (nghttp2 never indexes `authorization` itself, a token or a SigV4 signature.)
enum UnindexedFields {
    /// Whether a field named `name` (any case) changes with every request: `grpc-timeout` (a
    /// deadline's remaining time), `grpc-trace-bin`, `traceparent` and `tracestate` (a span of
    /// each request), `x-request-id`, `dpop` (a proof per request, RFC 9449) and `x-amz-date`
    /// (a SigV4 signature's time).
    static func contains(name: UnsafeRawBufferPointer) -> Bool {
        switch name.count {
        case 4: return HTTP2Codec.equalsIgnoringCase(name, "dpop")
        case 10: return HTTP2Codec.equalsIgnoringCase(name, "x-amz-date") || HTTP2Codec.equalsIgnoringCase(name, "tracestate")
        case 11: return HTTP2Codec.equalsIgnoringCase(name, "traceparent")
        case 12: return HTTP2Codec.equalsIgnoringCase(name, "grpc-timeout") || HTTP2Codec.equalsIgnoringCase(name, "x-request-id")
        case 14: return HTTP2Codec.equalsIgnoringCase(name, "grpc-trace-bin")
        default: return false
        }
    }
}
