import HTTP1

/// The last trailer section a connection received and the fields made of it: a next section
/// that is the same (a gRPC server's `grpc-status: 0` after every call) takes the same
/// ``HTTP1/HTTPFields``, not a String made anew for each name and value and an array for them
/// (~900 instructions a gRPC call). Only a small section is kept (it stays as long as the
/// connection).
struct RecentTrailers {
    /// The kept section, in storage of its own; empty when none is kept.
    private var section = HTTP2Head()
    /// The fields made of it; nil when none is kept.
    private var fields: HTTPFields?

    /// The largest section kept, in bytes of names and values.
    static let limit = 256

    /// The fields of the trailer section `head` holds.
    mutating func fields(of head: HTTP2Head) -> HTTPFields {
        if let fields, head == section { return fields }
        let made = head.fields
        if head.fieldByteCount <= Self.limit {
            section = head
            section.detachFields()
            fields = made
        } else {
            section = HTTP2Head()
            fields = nil
        }
        return made
    }
}
