import CLibevent
import COpenSSL
import Glibc

/// Writing a whole file so that readers see the old content or the new, never a part: the bytes
/// go to a temporary file in the same directory, are synced, and the temporary file is renamed
/// over the target.
public enum AtomicFile {
    /// Replaces `path` with `bytes`, readable as `mode` (e.g. `0o644`); throws with a message
    /// naming the file. `modified`: the file's modification time (seconds since 1970) instead
    /// of now; `syncDirectory`: the rename is synced too (it survives a crash right after).
    public static func write(_ bytes: [UInt8], to path: String, mode: mode_t, modified: Double? = nil,
                             syncDirectory: Bool = false) throws(EventLoopError) {
        // An unpredictable name, created exclusively and never through a symlink: the directory
        // may be shared with other containers (an emptyDir).
        var random = [UInt8](repeating: 0, count: 8)
        _ = RAND_bytes(&random, Int32(random.count))
        let temporary = path + ".tmp-" + random.map { String($0, radix: 16) }.joined()
        let fd = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode)
        guard fd >= 0 else { throw .system("cannot create \(temporary): \(String(cString: strerror(errno)))") }
        func fail(_ what: String) -> EventLoopError {
            let message = String(cString: strerror(errno))
            Glibc.close(fd)
            unlink(temporary)
            return .system("cannot \(what) \(path): \(message)")
        }
        var written = 0
        while written < bytes.count {
            let result = bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress! + written, bytes.count - written) }
            if result < 0 && errno == EINTR { continue }
            guard result > 0 else { throw fail("write") }
            written += result
        }
        // The mode asked for, whatever the umask; on disk before it replaces the old file.
        guard fchmod(fd, mode) == 0 else { throw fail("set the mode of") }
        if let modified {
            let seconds = modified.rounded(.down)
            let time = timespec(tv_sec: Int(seconds), tv_nsec: Int((modified - seconds) * 1e9))
            guard futimens(fd, [time, time]) == 0 else { throw fail("set the time of") }
        }
        guard fsync(fd) == 0 else { throw fail("sync") }
        Glibc.close(fd)
        guard rename(temporary, path) == 0 else {
            let message = String(cString: strerror(errno))
            unlink(temporary)
            throw .system("cannot replace \(path): \(message)")
        }
        if syncDirectory {
            let slash = path.lastIndex(of: "/")
            let directory = slash.map { $0 == path.startIndex ? "/" : String(path[..<$0]) } ?? "."
            let handle = open(directory, O_RDONLY | O_CLOEXEC)
            if handle >= 0 {
                fsync(handle)
                Glibc.close(handle)
            }
        }
    }

    /// The system's CA bundle as OpenSSL finds it (`SSL_CERT_FILE`, else OpenSSL's default file),
    /// or nil when it cannot be read.
    public static func systemTrustBundle() -> [UInt8]? {
        let environment = String(cString: X509_get_default_cert_file_env())
        let path = getenv(environment).map { String(cString: $0) } ?? String(cString: X509_get_default_cert_file())
        return read(path)
    }

    /// The whole content of `path`, or nil.
    public static func read(_ path: String) -> [UInt8]? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { Glibc.close(fd) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 64 * 1024)
        while true {
            let count = chunk.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress!, $0.count) }
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else { return count == 0 ? bytes : nil }
            bytes.append(contentsOf: chunk[0..<count])
        }
    }
}
