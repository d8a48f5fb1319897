/// A failure of the codec that ends the connection: the peer broke the protocol (a `GOAWAY`
/// is queued for it when nghttp2 could say so), or a call was not possible in the session's state.
public struct HTTP2CodecError: Error, Equatable, Sendable, CustomStringConvertible {
    /// nghttp2's error code (`NGHTTP2_ERR_*`, negative).
    public var code: Int32
    /// nghttp2's text for it.
    public var message: String

    /// Wraps an nghttp2 error code with its text.
    public init(code: Int32, message: String) {
        self.code = code
        self.message = message
    }

    /// The peer kept sending frames that must be answered (`PING`, `SETTINGS`) while not
    /// reading the answers: nghttp2 stopped at its queue limit.
    public var isFlood: Bool { code == -904 }  // NGHTTP2_ERR_FLOODED
    /// A header block went on over more `CONTINUATION` frames than
    /// ``HTTP2Settings/maxContinuations`` (the CONTINUATION flood).
    public var isContinuationFlood: Bool { code == -905 }  // NGHTTP2_ERR_TOO_MANY_CONTINUATIONS

    /// "HTTP/2: " and nghttp2's text.
    public var description: String { "HTTP/2: \(message)" }
}
