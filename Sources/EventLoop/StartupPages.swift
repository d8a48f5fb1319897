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
public enum StartupPages {
    /// How long after start the pages are released: by then every worker thread has created its
    /// listener and logged, and the first token fetches have run.
    public static let settleDelay: Duration = .seconds(1)

    /// A mapping of `/proc/self/smaps` and what its lines say.
    private struct Mapping {
        var start: UInt = 0
        var end: UInt = 0
        var eligible = false
        var rssKiB = 0
        var anonymousKiB = 0
    }

    /// Unmaps the clean read-only file pages of every mapped object; returns how many KiB were
    /// resident in them before.
    @discardableResult
    public static func release() -> Int {
        var released = 0
        for mapping in mappings() where mapping.eligible && mapping.anonymousKiB == 0 && mapping.rssKiB > 0 {
            guard let address = UnsafeMutableRawPointer(bitPattern: mapping.start) else { continue }
            if madvise(address, Int(mapping.end - mapping.start), MADV_DONTNEED) == 0 { released += mapping.rssKiB }
        }
        return released
    }

    /// `/proc/self/smaps`, parsed on its bytes (a String per line costs ~20k instructions a line,
    /// and the file has thousands).
    private static func mappings() -> [Mapping] {
        let text = readAll("/proc/self/smaps")
        var result: [Mapping] = []
        var current: Mapping?
        text.withUnsafeBytes { raw in
            guard let base = raw.baseAddress else { return }
            var lineStart = 0
            while lineStart < raw.count {
                // memchr finds each line's end (a byte loop cost ~5 instructions a byte, and the
                // file is some 100 KiB); only lines that can matter become slices.
                let found = memchr(base + lineStart, 0x0a, raw.count - lineStart)
                let lineEnd = found.map { UnsafeRawPointer($0) - base } ?? raw.count
                let first = raw[lineStart]
                if (first >= 0x30 && first <= 0x39) || (first >= 0x61 && first <= 0x66) || first == 0x52 || first == 0x41 {
                    let line = text[lineStart..<lineEnd]  // a mapping's header (hex), Rss: or Anonymous:
                    if let header = mappingHeader(line) {
                        if let done = current { result.append(done) }
                        current = header
                    } else if current != nil, startsWith(line, "Rss:") {
                        current?.rssKiB = number(line)
                    } else if current != nil, startsWith(line, "Anonymous:") {
                        current?.anonymousKiB = number(line)
                    }
                }
                lineStart = lineEnd + 1
            }
        }
        if let done = current { result.append(done) }
        return result
    }

    /// `start-end perms offset dev inode [path]`: a read-only private mapping of a file
    /// (`r-xp` or `r--p` with an absolute path) is eligible.
    private static func mappingHeader(_ line: ArraySlice<UInt8>) -> Mapping? {
        var index = line.startIndex
        var start: UInt = 0, end: UInt = 0
        guard parseHex(line, &index, &start), index < line.endIndex, line[index] == 0x2d else { return nil }
        index += 1
        guard parseHex(line, &index, &end), index < line.endIndex, line[index] == 0x20 else { return nil }
        index += 1
        guard index + 4 <= line.endIndex else { return nil }
        let perms = Array(line[index..<index + 4])
        let readOnly = perms == Array("r-xp".utf8) || perms == Array("r--p".utf8)
        let hasPath = line[(index + 4)...].contains(0x2f)
        return Mapping(start: start, end: end, eligible: readOnly && hasPath)
    }

    private static func parseHex(_ line: ArraySlice<UInt8>, _ index: inout Int, _ value: inout UInt) -> Bool {
        let first = index
        while index < line.endIndex {
            let byte = line[index]
            let digit: UInt
            switch byte {
            case 0x30...0x39: digit = UInt(byte - 0x30)
            case 0x61...0x66: digit = UInt(byte - 0x61 + 10)
            default: return index > first
            }
            value = value << 4 | digit
            index += 1
        }
        return index > first
    }

    private static func startsWith(_ line: ArraySlice<UInt8>, _ prefix: StaticString) -> Bool {
        guard line.count >= prefix.utf8CodeUnitCount else { return false }
        for offset in 0..<prefix.utf8CodeUnitCount where line[line.startIndex + offset] != prefix.utf8Start[offset] {
            return false
        }
        return true
    }

    /// The first decimal number on the line.
    private static func number(_ line: ArraySlice<UInt8>) -> Int {
        var value = 0
        var seen = false
        for byte in line {
            if byte >= 0x30 && byte <= 0x39 {
                value = value * 10 + Int(byte - 0x30)
                seen = true
            } else if seen {
                break
            }
        }
        return value
    }

    private static func readAll(_ path: String) -> [UInt8] {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return [] }
        defer { close(fd) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65536)
        while true {
            let count = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if count > 0 {
                bytes.append(contentsOf: chunk[0..<count])
            } else if count < 0 && errno == EINTR {
                continue
            } else {
                return bytes
            }
        }
    }
}
