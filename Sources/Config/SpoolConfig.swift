/// Where, and how much of, the responses of clients that read more slowly than their backend
/// sends are spooled to disk (`spool:`), so the backend connection goes back to the pool
/// instead of waiting on the slow client.
public struct SpoolConfig: Sendable, Equatable {
    /// The directory spool files are created in (and unlinked at once). Default `/tmp`.
    public var directory: String
    /// Most bytes all spool files of the process hold together; 0 turns spooling off.
    /// Past it, a response whose client falls behind holds its backend connection.
    public var maxBytes: Int

    /// Default ``maxBytes``: 1 GiB (nginx's `proxy_max_temp_file_size` per response).
    public static let defaultMaxBytes = 1 << 30

    /// Creates spool settings; every parameter defaults to the loader's default.
    public init(directory: String = "/tmp", maxBytes: Int = SpoolConfig.defaultMaxBytes) {
        self.directory = directory
        self.maxBytes = maxBytes
    }
}
