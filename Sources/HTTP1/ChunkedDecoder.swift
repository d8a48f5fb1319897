/// Incremental decoder for the chunked transfer coding (RFC 9112 §7.1).
///
/// The decoder never copies body data: the caller keeps the bytes (e.g. in a libevent
/// evbuffer), shows the decoder the start of the unconsumed input, and drains/moves bytes as
/// told by each ``Step``. Only framing bytes (size lines, CRLFs, trailers) are examined.
///
/// While a size line or the trailer section is incomplete the decoder returns `.needMore`
/// and remembers how far it got, so the next call must pass the same unconsumed input
/// (possibly extended); scanning therefore stays O(n) however the bytes are split.
public struct ChunkedDecoder: Sendable {
    /// One decoding step; see ``next(_:)``.
    public enum Step: Sendable, Equatable {
        /// The buffered bytes do not hold a complete chunk-size line, CRLF or trailer section.
        case needMore
        /// A chunk-size line with size > 0 (including its CRLF; extensions ignored) was parsed:
        /// drain `consumed` bytes; `size` data bytes follow.
        case chunkHeader(size: UInt64, consumed: Int)
        /// The next bytes are chunk data: move `min(remaining, available)` bytes, then call
        /// ``ChunkedDecoder/consumeData(_:)``. Returned without looking at the input.
        case data(remaining: UInt64)
        /// The CRLF after a chunk's data (`consumed` is 2).
        case chunkEnd(consumed: Int)
        /// The last-chunk line, the trailer section and the final CRLF, `consumed` bytes in
        /// all. The body is complete.
        case end(consumed: Int, trailers: HTTPFields)
    }

    private enum Phase: Sendable {
        case sizeLine
        case data(UInt64)
        case dataEnd
        /// After the last-chunk line; `start` is the offset of the trailer section.
        case trailers(start: Int)
        case done
    }

    private let maxExtensionLength: Int
    private let maxTrailerBytes: Int
    private let maxTrailerFields: Int
    private var phase: Phase = .sizeLine

    // Progress within the current size line / trailer section (offsets into the input).
    private var scanned = 0
    private var pendingCR = false
    private var size: UInt64 = 0
    private var digits = 0
    private var extensionStart = -1
    private var lineStart = 0

    /// Creates a decoder.
    /// - Parameters:
    ///   - maxExtensionLength: longest accepted chunk extension (bytes after the size, before CRLF).
    ///   - maxTrailerBytes: largest accepted trailer section, including its final CRLF.
    ///   - maxTrailerFields: most accepted trailer field lines.
    public init(maxExtensionLength: Int = 4096, maxTrailerBytes: Int = 65536, maxTrailerFields: Int = 100) {
        self.maxExtensionLength = maxExtensionLength
        self.maxTrailerBytes = maxTrailerBytes
        self.maxTrailerFields = maxTrailerFields
    }

    /// True once ``Step/end(consumed:trailers:)`` has been returned.
    /// Bytes of chunk data announced by the current chunk's size line and not consumed yet
    /// (0 outside chunk data): lets a reader refuse a chunk larger than it will take before
    /// any of its data arrives.
    public var dataRemaining: UInt64 {
        if case .data(let remaining) = phase { return remaining }
        return 0
    }

    public var isComplete: Bool {
        if case .done = phase { return true }
        return false
    }

    /// Records that the caller moved `n` bytes of chunk data.
    /// - Precondition: `0 <= n <= remaining` of the current `.data` step.
    public mutating func consumeData(_ n: Int) {
        guard case .data(let remaining) = phase else {
            precondition(n == 0, "consumeData called outside chunk data")
            return
        }
        precondition(n >= 0 && UInt64(n) <= remaining, "consumeData beyond chunk size")
        let left = remaining - UInt64(n)
        phase = left == 0 ? .dataEnd : .data(left)
    }

    /// Examines the start of the not-yet-consumed input and says what comes next.
    ///
    /// - Parameter bytes: the unconsumed input (a contiguous prefix of at least a few KiB
    ///   when that much is buffered).
    /// - Throws: ``HTTPParseError/invalid(_:)`` on any framing error, including calls after
    ///   the body is complete.
    public mutating func next(_ bytes: UnsafeRawBufferPointer) throws(HTTPParseError) -> Step {
        switch phase {
        case .data(let remaining):
            return .data(remaining: remaining)
        case .dataEnd:
            // chunk = chunk-size [ chunk-ext ] CRLF chunk-data CRLF
            if bytes.isEmpty { return .needMore }
            guard bytes[0] == ASCII.cr else { throw .invalid("missing CRLF after chunk data") }
            if bytes.count < 2 { return .needMore }
            guard bytes[1] == ASCII.lf else { throw .invalid("missing CRLF after chunk data") }
            phase = .sizeLine
            return .chunkEnd(consumed: 2)
        case .sizeLine:
            return try scanSizeLine(bytes)
        case .trailers(let start):
            return try scanTrailers(bytes, start: start)
        case .done:
            throw .invalid("chunked body already complete")
        }
    }

    /// chunk-size = 1*HEXDIG, then optional chunk-ext, then CRLF. No whitespace is accepted
    /// anywhere in the size (not even the BWS RFC 9112 §7.1.1 allows before ';').
    private mutating func scanSizeLine(_ bytes: UnsafeRawBufferPointer) throws(HTTPParseError) -> Step {
        let n = bytes.count
        var i = scanned
        while i < n {
            let b = bytes[i]
            if pendingCR {
                guard b == ASCII.lf else { throw .invalid("bare CR in chunk size line") }
                let consumed = i + 1
                let chunkSize = size
                resetLineState()
                if chunkSize == 0 {
                    phase = .trailers(start: consumed)
                    scanned = consumed
                    lineStart = consumed
                    return try scanTrailers(bytes, start: consumed)
                }
                phase = .data(chunkSize)
                return .chunkHeader(size: chunkSize, consumed: consumed)
            }
            if extensionStart >= 0 {
                // chunk-ext is ignored (RFC 9112 §7.1.1) but bounded and kept free of CTLs.
                if b == ASCII.cr {
                    pendingCR = true
                } else {
                    if b == ASCII.lf { throw .invalid("bare LF in chunk size line") }
                    if (b < ASCII.sp && b != ASCII.htab) || b == 0x7F {
                        throw .invalid("control character in chunk extension")
                    }
                    if i + 1 - extensionStart > maxExtensionLength { throw .invalid("chunk extension too long") }
                }
            } else if let h = ASCII.hexValue(b) {
                digits += 1
                if digits > 16 { throw .invalid("chunk size too large") }
                size = size << 4 | h
                if size > UInt64(Int64.max) { throw .invalid("chunk size too large") }
            } else if digits == 0 {
                throw .invalid("invalid chunk size")
            } else if b == ASCII.semicolon {
                extensionStart = i
                if 1 > maxExtensionLength { throw .invalid("chunk extension too long") }
            } else if b == ASCII.cr {
                pendingCR = true
            } else if b == ASCII.lf {
                throw .invalid("bare LF in chunk size line")
            } else {
                throw .invalid("invalid chunk size")
            }
            i += 1
        }
        scanned = i
        return .needMore
    }

    /// trailer-section = *( field-line CRLF ) CRLF (RFC 9112 §7.1.2). The end is found
    /// incrementally; the fields are parsed once, when the section is complete.
    private mutating func scanTrailers(_ bytes: UnsafeRawBufferPointer, start: Int) throws(HTTPParseError) -> Step {
        let n = bytes.count
        var i = scanned
        while i < n {
            let b = bytes[i]
            if pendingCR {
                guard b == ASCII.lf else { throw .invalid("bare CR in trailer section") }
                pendingCR = false
                if i - 1 == lineStart {
                    let end = i + 1
                    let trailers = try parseTrailers(bytes, start: start, end: end)
                    phase = .done
                    resetLineState()
                    return .end(consumed: end, trailers: trailers)
                }
                lineStart = i + 1
            } else if b == ASCII.cr {
                pendingCR = true
            } else if b == ASCII.lf {
                throw .invalid("bare LF in trailer section")
            }
            i += 1
            if i - start > maxTrailerBytes { throw .invalid("trailer section too large") }
        }
        scanned = i
        return .needMore
    }

    private func parseTrailers(_ bytes: UnsafeRawBufferPointer, start: Int, end: Int) throws(HTTPParseError) -> HTTPFields {
        if end - start == 2 { return HTTPFields() }  // no trailers: just the final CRLF
        var fields: [HTTPField] = []
        var known = KnownFields()
        let section = UnsafeRawBufferPointer(rebasing: bytes[0..<end])
        do {
            _ = try FieldSectionParser.parse(section, from: start, maxFields: maxTrailerFields, into: &fields, known: &known)
        } catch .tooManyFields {
            throw .invalid("too many trailer fields")
        }
        return HTTPFields(fields)
    }

    private mutating func resetLineState() {
        scanned = 0
        pendingCR = false
        size = 0
        digits = 0
        extensionStart = -1
        lineStart = 0
    }
}
