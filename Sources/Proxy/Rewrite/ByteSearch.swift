import Glibc

/// Finding a byte string in a field value or a target: `memchr` for its first byte, `memcmp`
/// for the rest (a request with placeholders is searched once per value per placeholder).
enum ByteSearch {
    /// Where `needle` first occurs in `text` at or after `start`, or nil.
    static func find(_ needle: [UInt8], in text: UnsafeRawBufferPointer, from start: Int = 0) -> Int? {
        guard let first = needle.first, let base = text.baseAddress, text.count - start >= needle.count else { return nil }
        return needle.withUnsafeBytes { needleBytes -> Int? in
            var index = start
            let last = text.count - needle.count
            while index <= last {
                guard let hit = memchr(base + index, Int32(first), last - index + 1) else { return nil }
                let at = base.distance(to: UnsafeRawPointer(hit))
                if memcmp(base + at, needleBytes.baseAddress!, needle.count) == 0 { return at }
                index = at + 1
            }
            return nil
        }
    }

    /// Whether `needle` occurs in `text` exactly at `index`.
    static func matches(_ needle: [UInt8], in text: UnsafeRawBufferPointer, at index: Int) -> Bool {
        guard index >= 0, text.count - index >= needle.count, let base = text.baseAddress else { return false }
        return needle.withUnsafeBytes { memcmp(base + index, $0.baseAddress!, needle.count) == 0 }
    }

    /// `text` with every occurrence of `needle` replaced by `replacement`.
    static func replacing(_ needle: [UInt8], with replacement: [UInt8], in text: UnsafeRawBufferPointer) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(text.count + replacement.count)
        var start = 0
        while let hit = find(needle, in: text, from: start) {
            out.append(contentsOf: UnsafeRawBufferPointer(rebasing: text[start..<hit]))
            out.append(contentsOf: replacement)
            start = hit + needle.count
        }
        out.append(contentsOf: UnsafeRawBufferPointer(rebasing: text[start...]))
        return out
    }
}
