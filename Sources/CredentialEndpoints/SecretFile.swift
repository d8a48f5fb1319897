import Glibc

/// Reads the small secret files the endpoints compare requests with (the Azure identity header,
/// the AWS authorization token) at each request, so they may be rotated: only a regular file
/// (a FIFO or a device would block the loop: opened without blocking, checked with `fstat`), at
/// most 64 KiB, surrounding whitespace and newlines trimmed; nil when it cannot be read or is
/// empty.
public enum SecretFile {
    private static let maxBytes = 64 * 1024

    /// The file's trimmed text, nil when it cannot be read, is not a regular file, too large or empty.
    public static func read(_ path: String) -> String? {
        let descriptor = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC)
        guard descriptor >= 0 else { return nil }
        defer { close(descriptor) }
        var status = stat()
        guard fstat(descriptor, &status) == 0, status.st_mode & S_IFMT == S_IFREG, Int(status.st_size) <= maxBytes else { return nil }
        var bytes = [UInt8](repeating: 0, count: Int(status.st_size))
        var filled = 0
        while filled < bytes.count {
            let count = bytes.withUnsafeMutableBytes { Glibc.read(descriptor, $0.baseAddress! + filled, $0.count - filled) }
            guard count > 0 else { break }
            filled += count
        }
        let text = String(decoding: bytes[..<filled], as: UTF8.self)
        let trimmed = text.drop { $0.isWhitespace }.reversed().drop { $0.isWhitespace }.reversed()
        return trimmed.isEmpty ? nil : String(trimmed)
    }
}
