/// The fields whose values differ from one request to the next, which the codec sends as
/// literals nghttp2 keeps out of its HPACK table (`NGHTTP2_NV_FLAG_NO_INDEX`, RFC 7541 §6.2.3).
///
/// Indexed, each such value would be added to the connection's dynamic table and never be
/// used again: it evicts entries that would be (a `content-type`, a bearer token), and since
/// nghttp2 finds a field by its name and then compares the value of every entry of that name,
/// a table filled with, say, 60 `grpc-timeout`s costs two `memcmp`s each for every one sent
/// after them (~5,000 instructions of a gRPC call whose caller sets a deadline, as every gRPC
/// runtime does when told to). A value that is the same on every request (a token, a
/// `user-agent`) is still indexed: sent once, then as an index.
enum UnindexedFields {
    /// Whether a field named `name` (any case) with `value` changes with every request:
    /// `grpc-timeout` (a deadline's remaining time), `grpc-trace-bin`, `traceparent` and
    /// `tracestate` (a span of each request), `x-request-id`, `dpop` (a proof per request,
    /// RFC 9449), `x-amz-date` and an AWS SigV4 `authorization` (a signature per request).
    static func contains(name: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer) -> Bool {
        switch name.count {
        case 4: return HTTP2Codec.equalsIgnoringCase(name, "dpop")
        case 10: return HTTP2Codec.equalsIgnoringCase(name, "x-amz-date") || HTTP2Codec.equalsIgnoringCase(name, "tracestate")
        case 11: return HTTP2Codec.equalsIgnoringCase(name, "traceparent")
        case 12: return HTTP2Codec.equalsIgnoringCase(name, "grpc-timeout") || HTTP2Codec.equalsIgnoringCase(name, "x-request-id")
        case 13:
            return value.count > 5 && HTTP2Codec.equalsIgnoringCase(UnsafeRawBufferPointer(rebasing: value[0..<5]), "aws4-")
                && HTTP2Codec.equalsIgnoringCase(name, "authorization")
        case 14: return HTTP2Codec.equalsIgnoringCase(name, "grpc-trace-bin")
        default: return false
        }
    }
}
