/// A field section as offsets into the bytes it was parsed from: the field lines of a request
/// or response head, read in place (no String per name or value). Valid only while ``bytes``
/// is.
public struct FieldSectionView {
    /// The bytes the offsets refer to; the section ends with its final CRLF at the end of them.
    public let bytes: UnsafeRawBufferPointer
    /// The field lines, in order.
    public let lines: [FieldLine]
    /// How many lines are named Connection (known from the parse: zero skips the search).
    let connectionLines: Int
    /// The index of the first of them when the parse says (-1: search for them).
    let firstConnectionLine: Int

    /// A view of `lines` located in `bytes` by someone else (lines a proxy copied out of a parsed
    /// head, say). (``lineEnd(_:)`` takes the section's final CRLF to end `bytes`.)
    public init(bytes: UnsafeRawBufferPointer, lines: [FieldLine]) {
        var connectionLines = 0
        for line in lines where ASCII.equalsLowercase(bytes, line.name, "connection") { connectionLines += 1 }
        self.init(bytes: bytes, lines: lines, connectionLines: connectionLines)
    }

    /// A view of `lines` over `bytes`.
    init(bytes: UnsafeRawBufferPointer, lines: [FieldLine], connectionLines: Int, firstConnectionLine: Int = -1) {
        self.bytes = bytes
        self.lines = lines
        self.connectionLines = connectionLines
        self.firstConnectionLine = firstConnectionLine
    }

    /// Whether `line`'s name equals `lowercase` ignoring ASCII case (`lowercase`: letters,
    /// digits, `-`).
    @inlinable @inline(__always)
    public func name(of line: FieldLine, equals lowercase: StaticString) -> Bool {
        ASCII.equalsLowercase(bytes, line.name, lowercase)
    }

    /// Whether `line`'s name equals `name` ignoring ASCII case (a configured header name).
    public func name(of line: FieldLine, equalsIgnoringCase name: String) -> Bool {
        guard line.name.count == name.utf8.count else { return false }
        return name.withUTF8InPlace { other in
            for (index, offset) in line.name.enumerated() where ASCII.lower(bytes[offset]) != ASCII.lower(other[index]) {
                return false
            }
            return true
        }
    }

    /// The bytes of `line`'s value (trimmed of surrounding whitespace).
    public func value(of line: FieldLine) -> UnsafeRawBufferPointer {
        UnsafeRawBufferPointer(rebasing: bytes[line.value])
    }

    /// Where the line at `index` ends, its CRLF included: where the next line starts, or the
    /// section's final CRLF. Consecutive lines `a...b` are `bytes[lines[a].name.lowerBound..<lineEnd(b)]`.
    public func lineEnd(_ index: Int) -> Int {
        index + 1 < lines.count ? lines[index + 1].name.lowerBound : bytes.count - 2
    }

    /// The options of the Connection lines other than `close` and `keep-alive`: further
    /// field names that belong to this hop (RFC 9110 §7.6.1). Empty, without allocating, for
    /// the usual `Connection: keep-alive` or none.
    public func connectionOptions() -> [Range<Int>] {
        var options: [Range<Int>] = []
        guard connectionLines > 0 else { return options }
        func add(_ line: FieldLine) {
            ASCII.forEachListElement(bytes, line.value) { buf, range in
                if !ASCII.equalsLowercase(buf, range, "keep-alive") && !ASCII.equalsLowercase(buf, range, "close") {
                    options.append(range)
                }
                return true
            }
        }
        if connectionLines == 1 && firstConnectionLine >= 0 {
            // The usual response: one line, and the parse knows which; most often it says only
            // `keep-alive` or `close` (compared whole: the list walk cost ~120 instructions).
            let value = lines[firstConnectionLine].value
            if ASCII.equalsLowercase(bytes, value, "keep-alive") || ASCII.equalsLowercase(bytes, value, "close") { return options }
            add(lines[firstConnectionLine])
        } else {
            for line in lines where ASCII.equalsLowercase(bytes, line.name, "connection") { add(line) }
        }
        return options
    }

    /// Whether `line` is named by one of `options` (ranges from ``connectionOptions()``).
    public func name(of line: FieldLine, isAmong options: [Range<Int>]) -> Bool {
        options.contains { option in
            option.count == line.name.count
                && zip(option, line.name).allSatisfy { ASCII.lower(bytes[$0]) == ASCII.lower(bytes[$1]) }
        }
    }

    /// The protocol a request asks to switch to (RFC 9110 §7.8): `upgrade` among the Connection
    /// options and an `Upgrade` line; its first protocol (``firstUpgradeProtocol()``). Nil,
    /// without looking at a line, when there is no Connection line.
    public func upgradeProtocol() -> UpgradeProtocol? {
        guard connectionLines > 0, options(connectionOptions(), contain: "upgrade") else { return nil }
        return firstUpgradeProtocol()
    }

    /// The first protocol of the first `Upgrade` line (a request's choice, or the one a `101`
    /// switched to); nil when there is none, or it is not `name[/version]` made of token characters.
    public func firstUpgradeProtocol() -> UpgradeProtocol? {
        for line in lines where ASCII.equalsLowercase(bytes, line.name, "upgrade") {
            var found: UpgradeProtocol?
            var seen = false
            _ = ASCII.forEachListElement(bytes, line.value) { buf, range in
                seen = true
                let slash = buf[range].firstIndex(of: UInt8(ascii: "/"))
                let nameEnd = slash ?? range.upperBound
                let valid = nameEnd > range.lowerBound
                    && buf[range].allSatisfy { ASCII.isTchar($0) || $0 == UInt8(ascii: "/") }
                    && (slash.map { $0 + 1 < range.upperBound && !buf[($0 + 1)..<range.upperBound].contains(UInt8(ascii: "/")) } ?? true)
                if valid {
                    found = UpgradeProtocol(name: ASCII.lowercasedString(buf, range.lowerBound..<nameEnd),
                                            text: String(decoding: UnsafeRawBufferPointer(rebasing: buf[range]), as: UTF8.self))
                }
                return false
            }
            if seen { return found }
        }
        return nil
    }

    /// Whether one of `options` (ranges from ``connectionOptions()``) is `lowercase`.
    public func options(_ options: [Range<Int>], contain lowercase: StaticString) -> Bool {
        options.contains { ASCII.equalsLowercase(bytes, $0, lowercase) }
    }
}
