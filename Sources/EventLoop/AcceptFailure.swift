import Glibc

/// A failed `accept` on a ``Listener`` (typically `EMFILE`, `ENFILE`, `ENOBUFS` or `ENOMEM`),
/// after which the listener pauses for ``pause``.
public struct AcceptFailure: Sendable, Equatable {
    /// The `errno` of the failed call.
    public var code: Int32
    /// How long the listener stops accepting before trying again.
    public var pause: Duration

    /// Describes a failure.
    public init(code: Int32, pause: Duration) {
        self.code = code
        self.pause = pause
    }

    /// The system's text for ``code`` (e.g. "Too many open files").
    public var message: String { String(cString: strerror(code)) }
}
