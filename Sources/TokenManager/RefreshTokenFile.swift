import EventLoop
import Foundation
import Logging

/// The refresh token of a `grant: refresh_token` credential (RFC 6749 §6), kept in its file
/// (`refreshTokenFile`): put there once by whoever consented, rewritten by the sidecar each time
/// the server rotates it, atomically (a temporary file, mode 0600, fsync, then rename over it)
/// before the access token that came with it is used — a replica killed at any moment leaves
/// the newest refresh token it holds in the file.
///
/// Which token is newest is decided by when each was issued (wall-clock seconds): the file's
/// modification time for a token read from it (the sidecar sets it to the issue time when it
/// writes one), the start of the fetch that returned a rotated one, the issue time of a shared
/// entry adopted from the fleet. So a replica restarted from
/// an old file adopts the fleet's newer sealed token, and an operator's fresh file (after a
/// revocation) wins over the fleet's spent one. A file changed on disk by someone else is read
/// again before the next fetch (``changedOnDisk()`` tells the credential to fetch at once).
///
/// Thread-safe (a lock): the token loop uses it, and so does the `token` command's loop.
public final class RefreshTokenFile: Sendable {
    /// The file.
    public let file: CredentialFile
    private let state: Locked<Known>

    /// What this process holds: the token, when it was issued, and the file's identity when
    /// this process last read or wrote it.
    private struct Known {
        var token: String?
        var issuedAtWall: Double = 0
        var stamp: FileStamp?
    }

    /// The modification time, size and inode of the file: a rename over it or a write changes them.
    struct FileStamp: Equatable {
        let modified: Double
        let size: Int
        let inode: UInt64
    }

    /// A refresh token file at `path` (read at the first ``current()``).
    public init(path: String) {
        file = CredentialFile(key: "refreshTokenFile", path: path)
        state = Locked(Known())
    }

    /// The refresh token to send now: the file's when this process holds none yet or the file
    /// changed on disk since, else the one it holds. Errors name the file, never its contents.
    public func current() throws(TokenFetchError) -> String {
        let stamp = Self.stamp(file.path)
        if let held = state.withLock({ $0.token != nil && $0.stamp == stamp ? $0.token : nil }) { return held }
        let text = String(decoding: try file.read(), as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        guard !text.isEmpty else { throw file.problem("is empty (write the refresh token there)") }
        guard text.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) else { throw file.problem("holds spaces or control characters") }
        state.withLock { $0 = Known(token: text, issuedAtWall: stamp?.modified ?? 0, stamp: stamp) }
        return text
    }

    /// Whether the file changed on disk since this process last read or wrote it (replaced by
    /// an operator, or by a Kubernetes secret update).
    public func changedOnDisk() -> Bool {
        let stamp = Self.stamp(file.path)
        return state.withLock { $0.token != nil && stamp != nil && $0.stamp != stamp }
    }

    /// The token server rotated the refresh token in the answer to a fetch started at
    /// `issuedAtWall`: `token` replaces it, in the file first. Returns false when the file could
    /// not be written (the new token is still used from memory; the caller logs it, and the
    /// next rotation writes again).
    @discardableResult
    public func rotate(to token: String, issuedAtWall: Double) -> Bool {
        let written = write(token, issuedAtWall: issuedAtWall)
        let stamp = written ? Self.stamp(file.path) : nil
        state.withLock { $0 = Known(token: token, issuedAtWall: issuedAtWall, stamp: stamp ?? $0.stamp) }
        return written
    }

    /// What ``adopt(_:issuedAtWall:)`` did.
    public enum AdoptOutcome: Sendable, Equatable {
        /// Taken and written to the file.
        case taken
        /// Taken, but the file could not be written (kept in memory).
        case takenNotWritten
        /// Not taken: the same token, or not newer than the one held.
        case kept
    }

    /// The fleet's refresh token from a shared entry issued at `issuedAtWall`: taken (and
    /// written) when it is another one and newer than the one this process holds — after the
    /// file, if someone else changed it, is read again.
    @discardableResult
    public func adopt(_ token: String, issuedAtWall: Double) -> AdoptOutcome {
        if changedOnDisk() || held == nil { _ = try? current() }
        let (held, heldAt) = state.withLock { ($0.token, $0.issuedAtWall) }
        guard token != held, issuedAtWall > heldAt else { return .kept }
        return rotate(to: token, issuedAtWall: issuedAtWall) ? .taken : .takenNotWritten
    }

    /// The token this process holds (nil before the first read).
    public var held: String? { state.withLock { $0.token } }

    /// Writes `token` by rename (``AtomicFile``, mode 0600, the directory synced), its
    /// modification time set to `issuedAtWall`: a process that reads the file after a restart
    /// knows how new the token is on the fleet's scale.
    private func write(_ token: String, issuedAtWall: Double) -> Bool {
        (try? AtomicFile.write(Array((token + "\n").utf8), to: file.path, mode: 0o600, modified: issuedAtWall, syncDirectory: true)) != nil
    }

    static func stamp(_ path: String) -> FileStamp? {
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        let modified = Double(info.st_mtim.tv_sec) + Double(info.st_mtim.tv_nsec) / 1e9
        return FileStamp(modified: modified, size: Int(info.st_size), inode: UInt64(info.st_ino))
    }
}
