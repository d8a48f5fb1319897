/// JSON string literals (RFC 8259 §7): the project's one JSON escaper, used by ``JSONValue``, the
/// proxy's error bodies and the log writer. Escapes `"`, `\\` and control characters (and DEL);
/// everything else is copied as UTF-8. Runs without an escape are copied in one piece: log
/// lines go through here on every request.
public enum JSONString {
    /// Appends `text` as a quoted JSON string.
    public static func append(_ text: String, to out: inout [UInt8]) {
        out.append(0x22)
        var text = text
        text.withUTF8 { bytes in
            var runStart = 0
            for index in 0..<bytes.count {
                let byte = bytes[index]
                guard byte == 0x22 || byte == 0x5C || byte < 0x20 || byte == 0x7F else { continue }
                out.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[runStart..<index]))
                runStart = index + 1
                switch byte {
                case 0x22: out.append(contentsOf: [0x5C, 0x22])
                case 0x5C: out.append(contentsOf: [0x5C, 0x5C])
                case 0x0A: out.append(contentsOf: [0x5C, 0x6E])
                case 0x0D: out.append(contentsOf: [0x5C, 0x72])
                case 0x09: out.append(contentsOf: [0x5C, 0x74])
                default: out.append(contentsOf: [0x5C, 0x75, 0x30, 0x30, hex[Int(byte >> 4)], hex[Int(byte & 0x0F)]])
                }
            }
            out.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[runStart..<bytes.count]))
        }
        out.append(0x22)
    }

    /// `text` as a quoted JSON string.
    public static func quoted(_ text: String) -> String {
        var out: [UInt8] = []
        out.reserveCapacity(text.utf8.count + 2)
        append(text, to: &out)
        return String(decoding: out, as: UTF8.self)
    }

    private static let hex: [UInt8] = Array("0123456789abcdef".utf8)
}
