import HTTP1

/// The storage of an HTTP/2 stream's response head, kept by the worker between streams
/// (``WorkerContext/takeStreamHead()``): the forwarded lines' bytes and where each line is.
struct StreamHeadStorage {
    /// The head's bytes (the status line and the forwarded field lines).
    var bytes: [UInt8]
    /// Where each forwarded field line's name and value are in ``bytes``.
    var lines: [FieldLine]
}
