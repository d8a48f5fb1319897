/// Finds the end of a message head (the empty line after the field section) incrementally.
///
/// The scanner remembers how far it has looked, so calling ``scan(_:)`` again after more
/// bytes arrived only examines the new bytes; total work stays O(n) for a head delivered in
/// many small reads. It also rejects bare CR and bare LF early: RFC 9112 §2.2 allows a
/// recipient to accept bare LF, but accepting it where a downstream parser does not is a
/// request-smuggling vector, so this proxy requires CRLF everywhere.
public struct HeadScanner: Sendable {
    /// Leading empty lines tolerated before the start line (RFC 9112 §2.2 says "at least
    /// one"; a few cover clients that send an extra CRLF after a body).
    static let maxLeadingEmptyLines = 4

    private let limit: Int
    /// Bytes of the message already examined.
    private var scanned = 0
    /// Offset of the first byte of the current line.
    private var lineStart = 0
    /// The previous byte was a CR whose LF had not been seen yet.
    private var pendingCR = false
    /// A non-empty line (the start line) has been seen.
    private var sawStartLine = false
    private var leadingEmptyLines = 0
    /// Set once the end has been found, so repeated calls return the same answer.
    private var headLength: Int?

    /// Creates a scanner that fails with ``HTTPParseError/headTooLarge`` once `limit` bytes
    /// have been examined without finding the end of the head.
    public init(limit: Int = 65536) {
        precondition(limit > 0, "limit must be positive")
        self.limit = limit
    }

    /// Scans `bytes`, everything buffered from the start of the message (the same prefix plus
    /// new data on each call).
    ///
    /// - Returns: the head length including the final CRLFCRLF (and any leading empty lines),
    ///   or nil if more bytes are needed.
    /// - Throws: ``HTTPParseError/headTooLarge`` after `limit` bytes without the end;
    ///   ``HTTPParseError/invalid(_:)`` on a bare LF, a bare CR, or too many leading empty lines.
    public mutating func scan(_ bytes: UnsafeRawBufferPointer) throws(HTTPParseError) -> Int? {
        if let headLength { return headLength }
        let end = min(bytes.count, limit)
        var i = scanned
        while i < end {
            if !pendingCR {
                // Fast path: skip 8 bytes at a time while none of them is a control byte
                // <= CR, then jump to the first one; most head bytes are printable.
                while i &+ 8 <= end {
                    let stop = ASCII.hasLess(ASCII.word(bytes, i), ASCII.cr &+ 1)
                    if stop != 0 { i &+= ASCII.firstMarked(stop); break }
                    i &+= 8
                }
                while i < end, bytes[i] > ASCII.cr { i &+= 1 }
                if i == end { break }
            }
            let b = bytes[i]
            if pendingCR {
                guard b == ASCII.lf else { throw .invalid("bare CR in message head") }
                pendingCR = false
                if i - 1 == lineStart {  // empty line
                    if sawStartLine {
                        headLength = i + 1
                        scanned = i + 1
                        return i + 1
                    }
                    leadingEmptyLines += 1
                    if leadingEmptyLines > Self.maxLeadingEmptyLines {
                        throw .invalid("too many empty lines before start line")
                    }
                } else {
                    sawStartLine = true
                }
                lineStart = i + 1
            } else if b == ASCII.cr {
                pendingCR = true
            } else if b == ASCII.lf {
                throw .invalid("bare LF in message head")
            }
            i += 1
        }
        scanned = i
        if i >= limit { throw .headTooLarge }
        return nil
    }

    /// Whether nothing of the current message has been scanned yet.
    public var isFresh: Bool { scanned == 0 && headLength == nil }

    /// Forgets all progress, ready for the next message.
    public mutating func reset() {
        scanned = 0
        lineStart = 0
        pendingCR = false
        sawStartLine = false
        leadingEmptyLines = 0
        headLength = nil
    }
}
