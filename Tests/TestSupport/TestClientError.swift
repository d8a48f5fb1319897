/// Why ``RawClient`` could not connect or read a response; test helpers also throw it as a
/// generic "this test's setup failed" error (``malformed(_:)`` with a description).
public enum TestClientError: Error {
    /// The socket could not be created or connected (`errno`).
    case connect(Int32)
    /// The peer closed the connection before the expected bytes arrived.
    case closed
    /// No byte arrived within the receive timeout (or the read failed, e.g. on a reset).
    case timeout
    /// The bytes were not a response (the offending line), or another failure, described.
    case malformed(String)
}
