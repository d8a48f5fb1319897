import Glibc

/// Gives back the pages of program text and read-only data that only start-up touched.
///
/// The binary carries the Swift runtime, Foundation, YAML and argument parsing statically; parsing
/// the configuration touches megabytes of that code once, and the kernel's fault-around maps
/// 64 KiB around every touched page. Those pages stay counted in the process's RSS for its whole
/// life although a running proxy never executes them again. Unmapping them (`MADV_DONTNEED`)
/// costs nothing to correctness — they are clean copies of the file, and whatever runs later
/// faults its pages back in from the page cache — and leaves the RSS at the real working set.
///
/// Only read-only, file-backed, private mappings without a single anonymous (copied-on-write)
/// page qualify: a relocated read-only section (RELRO) holds anonymous pages and is left alone,
/// because dropping it would bring back the unrelocated file contents.
enum StartupPages {
    /// How long after start the pages are released: by then every worker thread has created its
    /// listener and logged, and the first token fetches have run.
    static let settleDelay: Duration = .seconds(1)

    /// Unmaps the clean read-only file pages of every mapped object; returns how many KiB were
    /// resident in them before.
    @discardableResult
    static func release() -> Int {
        guard let file = fopen("/proc/self/smaps", "r") else { return 0 }
        defer { fclose(file) }
        var candidates: [(start: UInt, length: Int, rss: Int)] = []
        var current: (start: UInt, length: Int, eligible: Bool)?
        var rss = 0
        var anonymous = 0
        func finish() {
            if let mapping = current, mapping.eligible, anonymous == 0, rss > 0 {
                candidates.append((mapping.start, mapping.length, rss))
            }
            current = nil
        }
        var buffer = [CChar](repeating: 0, count: 4096)
        while fgets(&buffer, Int32(buffer.count), file) != nil {
            let line = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
            if let mapping = mappingHeader(line) {
                finish()
                current = mapping
                rss = 0
                anonymous = 0
            } else if line.hasPrefix("Rss:") {
                rss = kilobytes(line)
            } else if line.hasPrefix("Anonymous:") {
                anonymous = kilobytes(line)
            }
        }
        finish()
        var released = 0
        for mapping in candidates {
            guard let address = UnsafeMutableRawPointer(bitPattern: mapping.start) else { continue }
            if madvise(address, mapping.length, MADV_DONTNEED) == 0 { released += mapping.rss }
        }
        return released
    }

    /// Parses `start-end perms offset dev inode path`: the range, and whether it is a read-only
    /// private mapping of a file (`r-xp` or `r--p` with a path).
    private static func mappingHeader(_ line: String) -> (start: UInt, length: Int, eligible: Bool)? {
        let parts = line.split(separator: " ", omittingEmptySubsequences: true)
        guard parts.count >= 5, let dash = parts[0].firstIndex(of: "-"),
              let start = UInt(parts[0][..<dash], radix: 16),
              let end = UInt(parts[0][parts[0].index(after: dash)...], radix: 16) else { return nil }
        let perms = parts[1]
        let path = parts.count >= 6 ? parts[5] : ""
        let eligible = (perms == "r-xp" || perms == "r--p") && path.hasPrefix("/")
        return (start, Int(end - start), eligible)
    }

    private static func kilobytes(_ line: String) -> Int {
        line.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first.flatMap { Int($0) } ?? 0
    }
}
