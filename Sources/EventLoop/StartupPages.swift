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

    /// `/proc/self/smaps`, parsed on its bytes in place: memchr finds each line's end, and only
    /// the lines that can matter (a mapping's header, `Rss:`, `Anonymous:`) are looked at. (A
    /// String per line cost ~20k instructions a line, and slices of the file ~250; the file has
    /// thousands of lines, and this runs while the proxy serves its first requests.)
    private static func mappings() -> [Mapping] {
        let text = readAll("/proc/self/smaps")
        var result: [Mapping] = []
        var current: Mapping?
        text.withUnsafeBytes { raw in
            guard let base = raw.baseAddress else { return }
            var lineStart = 0
            while lineStart < raw.count {
                let found = memchr(base + lineStart, 0x0a, raw.count - lineStart)
                let lineEnd = found.map { UnsafeRawPointer($0) - base } ?? raw.count
                let line = UnsafeRawBufferPointer(rebasing: raw[lineStart..<lineEnd])
                lineStart = lineEnd + 1
                guard let first = line.first else { continue }
                if (first >= 0x30 && first <= 0x39) || (first >= 0x61 && first <= 0x66) {
                    if let header = mappingHeader(line) {
                        if let done = current { result.append(done) }
                        current = header
                    }
                } else if first == 0x52, current != nil, startsWith(line, "Rss:") {  // 'R' first: most lines are neither
                    current?.rssKiB = number(line)
                } else if first == 0x41, current != nil, startsWith(line, "Anonymous:") {
                    current?.anonymousKiB = number(line)
                }
            }
        }
        if let done = current { result.append(done) }
        return result
    }

    /// `start-end perms offset dev inode [path]`: a read-only private mapping of a file
    /// (`r-xp` or `r--p` with an absolute path) is eligible.
    private static func mappingHeader(_ line: UnsafeRawBufferPointer) -> Mapping? {
        var index = 0
        var start: UInt = 0, end: UInt = 0
        guard parseHex(line, &index, &start), index < line.count, line[index] == 0x2d else { return nil }
        index += 1
        guard parseHex(line, &index, &end), index < line.count, line[index] == 0x20 else { return nil }
        index += 1
        guard index + 4 <= line.count else { return nil }
        // "r-xp" or "r--p": readable, not writable, private.
        let readOnly = line[index] == 0x72 && line[index + 1] == 0x2d
            && (line[index + 2] == 0x78 || line[index + 2] == 0x2d) && line[index + 3] == 0x70
        let hasPath = memchr(line.baseAddress! + index + 4, 0x2f, line.count - index - 4) != nil
        return Mapping(start: start, end: end, eligible: readOnly && hasPath)
    }

    private static func parseHex(_ line: UnsafeRawBufferPointer, _ index: inout Int, _ value: inout UInt) -> Bool {
        let first = index
        while index < line.count {
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

    private static func startsWith(_ line: UnsafeRawBufferPointer, _ prefix: StaticString) -> Bool {
        let count = prefix.utf8CodeUnitCount
        return line.count >= count && memcmp(line.baseAddress!, prefix.utf8Start, count) == 0
    }

    /// The first decimal number on the line.
    private static func number(_ line: UnsafeRawBufferPointer) -> Int {
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

    /// The whole file, read straight into the array's spare capacity (grown as needed); empty
    /// when it cannot be read. (Also what ``ReceiveWindow/systemLimit`` reads `/proc` with.)
    static func readAll(_ path: String) -> [UInt8] {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return [] }
        defer { close(fd) }
        var capacity = 256 * 1024
        while true {
            var failed = false
            let bytes = [UInt8](unsafeUninitializedCapacity: capacity) { buffer, count in
                count = 0
                while count < buffer.count {
                    let got = read(fd, buffer.baseAddress! + count, buffer.count - count)
                    if got > 0 {
                        count += got
                    } else if got < 0 && errno == EINTR {
                        continue
                    } else {
                        failed = got < 0
                        return
                    }
                }
            }
            // Filled up: the file may be longer. Read it again from its start into more room
            // (a /proc file is generated afresh by each read from offset 0).
            guard bytes.count == capacity, !failed else { return failed ? [] : bytes }
            capacity *= 2
            guard lseek(fd, 0, SEEK_SET) == 0 else { return [] }
        }
    }
}
