import Admin
import Crypto
import EventLoop
import Glibc

/// The running configuration's version and the story of its reloads, and the watch that
/// reloads it when its file changes — a Kubernetes ConfigMap changes under the process (an
/// atomic swap of the `..data` symlink) and sends no signal. Confined to the control loop.
final class ConfigReloads {
    /// How often the file is looked at.
    static let watchInterval: Duration = .seconds(1)
    /// What the status page, `POST /reload` and the metrics show.
    private(set) var report: ConfigurationReport
    /// The digest of the file's content the watch saw last (applied or refused): a refused file
    /// is tried again only once it changes again.
    private var seen: [UInt8]?
    private var timer: Timer?

    /// The state at start, for the file at `file` as it was loaded.
    init(file: String) {
        let digest = Self.digest(ofFile: file)
        seen = digest
        report = ConfigurationReport(file: file, version: Self.version(digest), loadedAt: Self.now())
    }

    /// The first 12 hex digits of SHA-256 of the content (`unreadable` without one).
    static func version(_ digest: [UInt8]?) -> String {
        digest.map { String(Digest.hex($0).prefix(12)) } ?? "unreadable"
    }

    /// SHA-256 of the file's content (through symlinks; at most 4 MiB, the loader's limit),
    /// nil when it cannot be read now.
    static func digest(ofFile path: String) -> [UInt8]? {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return nil }
        defer { close(descriptor) }
        var content: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65536)
        while content.count <= 4 * 1024 * 1024 {
            let count = chunk.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
            if count < 0 && errno == EINTR { continue }
            guard count >= 0 else { return nil }
            if count == 0 { break }
            content.append(contentsOf: chunk[0..<count])
        }
        return Digest.sha256(content)
    }

    /// Now, for the report.
    private static func now() -> WallClockTime {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        return WallClockTime(secondsSince1970: Double(now.tv_sec) + Double(now.tv_nsec) / 1e9)
    }

    /// Looks at the file every ``watchInterval`` and calls `changed` when its content differs
    /// from what was seen last (a file that cannot be read — between the steps of a swap — is
    /// looked at again next time).
    func watch(on loop: EventLoop, changed: @escaping () -> Void) {
        timer = Timer(on: loop, after: Self.watchInterval, repeating: Self.watchInterval) { [unowned self] in
            guard let digest = Self.digest(ofFile: report.file), digest != seen else { return }
            changed()
        }
    }

    /// A reload is about to read the file: what it reads is what the watch has seen.
    func reading() -> [UInt8]? {
        let digest = Self.digest(ofFile: report.file)
        if digest != nil { seen = digest }
        return digest
    }

    /// The file with `digest` applied.
    func applied(_ digest: [UInt8]?) {
        report.version = Self.version(digest)
        report.loadedAt = Self.now()
        report.lastError = nil
        report.reloads += 1
    }

    /// A reload was refused for `error` (`FILE: key: problem`, never a secret: problems name keys).
    func refused(_ error: String) {
        report.lastError = error
        report.lastErrorAt = Self.now()
        report.failedReloads += 1
    }
}
