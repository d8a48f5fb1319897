import CLibevent
import Glibc

/// An unlinked temporary file that keeps bytes in order: appended from one evbuffer, read back
/// into another, each at its own offset (`pwritev`/`pread`, so the file position is never used).
///
/// A response whose client reads more slowly than its backend sends is spooled here, so the
/// backend connection can go back to the pool (nginx's `proxy_buffering` temporary files).
/// Nothing is cached in Swift memory: bytes go from the evbuffer's chains straight to the file
/// and from the file straight into reserved evbuffer space. The file is unlinked at once, so it
/// disappears with its descriptor, even if the process is killed.
///
/// Writes and reads block the loop for as long as the page cache takes (as nginx's do without
/// `aio`); they are never on the path of a client that keeps up.
public final class SpoolFile {
    private let fd: Int32
    /// Bytes written so far: the file's size.
    public private(set) var size = 0
    /// Bytes read back so far.
    public private(set) var readOffset = 0
    /// Bytes at the start of the file whose blocks were given back after being read.
    public private(set) var released = 0
    /// The file system refused to punch holes: read bytes are given back only when the file
    /// is emptied.
    private var punchUnsupported = false

    /// Bytes written and not yet read back.
    public var pending: Int { size - readOffset }

    /// Bytes the file holds on disk: written and not given back.
    public var held: Int { size - released }

    /// Bytes of disk the file occupies now, as the file system reports it (for diagnostics and
    /// tests: it checks that given-back blocks really were freed).
    public var diskUsage: Int {
        var info = stat()
        guard fstat(fd, &info) == 0 else { return -1 }
        return Int(info.st_blocks) * 512
    }

    /// Read bytes are given back in steps of this many (a punch per step, not per read).
    public static let releaseStep = 1 << 20

    /// Creates an empty spool file in `directory` (and unlinks it at once).
    public init(directory: String) throws(SpoolError) {
        var template = Array("\(directory)/token-sidecar-spool.XXXXXX".utf8CString)
        let fd = template.withUnsafeMutableBufferPointer { mkstemp($0.baseAddress!) }
        guard fd >= 0 else { throw SpoolError(operation: "create a file in \(directory)", code: errno) }
        template.withUnsafeBufferPointer { _ = unlink($0.baseAddress!) }
        // Not inherited by token-server helpers or anything else the process starts.
        _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
        self.fd = fd
    }

    deinit { Glibc.close(fd) }

    /// Appends the first `max` bytes of `source` (all of them by default) to the file, draining
    /// what was written. On an error (`ENOSPC`, `EIO`) the bytes not written stay in `source`.
    public func append(from source: EventBuffer, max: Int = .max) throws(SpoolError) {
        let maxVectors = 64
        // libevent's `evbuffer_iovec` is the system's `iovec`: the chains go to pwritev as they are.
        var vectors = [iovec](repeating: iovec(), count: maxVectors)
        var left = min(max, source.count)
        while left > 0 {
            let count = min(Int(evbuffer_peek(source.raw, left, nil, &vectors, Int32(maxVectors))), maxVectors)
            // The last chain peeked may reach past `left`.
            var total = 0
            for index in 0..<count {
                vectors[index].iov_len = Swift.min(vectors[index].iov_len, left - total)
                total += vectors[index].iov_len
            }
            let written = pwritev(fd, vectors, Int32(count), off_t(size))
            if written < 0 {
                if errno == EINTR { continue }
                throw SpoolError(operation: "write", code: errno)
            }
            if written == 0 { throw SpoolError(operation: "write", code: EIO) }
            size += written
            left -= written
            source.drain(written)
        }
    }

    /// Reads up to `max` pending bytes into reserved space at the end of `destination`;
    /// returns how many.
    @discardableResult
    public func read(into destination: EventBuffer, max: Int) throws(SpoolError) -> Int {
        let wanted = min(max, pending)
        guard wanted > 0 else { return 0 }
        var space = iovec()
        guard evbuffer_reserve_space(destination.raw, wanted, &space, 1) == 1, space.iov_len >= wanted else {
            throw SpoolError(operation: "reserve buffer space", code: ENOMEM)
        }
        var filled = 0
        while filled < wanted {
            let got = pread(fd, space.iov_base.advanced(by: filled), wanted - filled, off_t(readOffset + filled))
            if got < 0 {
                if errno == EINTR { continue }
                throw SpoolError(operation: "read", code: errno)
            }
            // The file is never shorter than what was written to it.
            if got == 0 { throw SpoolError(operation: "read", code: EIO) }
            filled += got
        }
        space.iov_len = filled
        evbuffer_commit_space(destination.raw, &space, 1)
        readOffset += filled
        return filled
    }

    /// Gives back the disk blocks of bytes already read, so a long response whose client
    /// follows closely holds only what it has not read: the whole file once everything was
    /// read (it starts again at offset 0), else the read part in whole ``releaseStep``s.
    /// Returns the bytes given back.
    @discardableResult
    public func releaseRead() -> Int {
        if pending == 0 {
            guard size > 0 else { return 0 }
            let freed = held
            _ = ftruncate(fd, 0)
            size = 0
            readOffset = 0
            released = 0
            return freed
        }
        let boundary = readOffset - readOffset % Self.releaseStep
        guard !punchUnsupported, boundary - released >= Self.releaseStep else { return 0 }
        guard shim_punch_hole(fd, off_t(released), off_t(boundary - released)) == 0 else {
            punchUnsupported = true
            return 0
        }
        let freed = boundary - released
        released = boundary
        return freed
    }
}

/// A spool file operation failed.
public struct SpoolError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What was being done ("write", "create a file in /tmp").
    public let operation: String
    /// The `errno` value.
    public let code: Int32

    /// An error of `operation` with `errno` `code`.
    public init(operation: String, code: Int32) {
        self.operation = operation
        self.code = code
    }

    /// "write: No space left on device".
    public var description: String { "\(operation): \(String(cString: strerror(code)))" }
}
