/// HTTP/2 frames made by hand, for what a well-behaved codec would never send: header names
/// and values HPACK-encoded as given (literal, never indexed, no Huffman), any frame order.
enum RawFrames {
    /// A valid GET's pseudo-header fields.
    static let getRequest: [(String, String)] = [(":method", "GET"), (":scheme", "http"), (":authority", "a.test"), (":path", "/")]

    /// The client connection preface and an empty SETTINGS frame.
    static func preface() -> [UInt8] {
        Array("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".utf8) + frame(type: 4, flags: 0, stream: 0, [])
    }

    /// A SETTINGS frame with `entries` (identifier, value); empty: a server's first frame.
    static func settings(_ entries: [(UInt16, UInt32)] = []) -> [UInt8] {
        frame(type: 4, flags: 0, stream: 0, entries.flatMap { id, value in
            [UInt8(id >> 8), UInt8(id & 0xff), UInt8(value >> 24), UInt8(value >> 16 & 0xff), UInt8(value >> 8 & 0xff), UInt8(value & 0xff)]
        })
    }

    /// A SETTINGS acknowledgement.
    static func settingsAck() -> [UInt8] { frame(type: 4, flags: 1, stream: 0, []) }

    /// A HEADERS frame carrying `fields`.
    static func headers(stream: Int32, endStream: Bool, endHeaders: Bool = true, fields: [(String, String)]) -> [UInt8] {
        frame(type: 1, flags: (endStream ? 0x1 : 0) | (endHeaders ? 0x4 : 0), stream: stream, block(fields))
    }

    /// A CONTINUATION frame carrying `fields`.
    static func continuation(stream: Int32, endHeaders: Bool, fields: [(String, String)]) -> [UInt8] {
        frame(type: 9, flags: endHeaders ? 0x4 : 0, stream: stream, block(fields))
    }

    /// A DATA frame.
    static func data(stream: Int32, endStream: Bool, _ bytes: [UInt8]) -> [UInt8] {
        frame(type: 0, flags: endStream ? 0x1 : 0, stream: stream, bytes)
    }

    /// The (stream, error code) of every RST_STREAM frame in `bytes` (frames from a server: no preface).
    /// A `WINDOW_UPDATE` of `increment` on `stream`.
    static func windowUpdate(stream: Int32, increment: UInt32) -> [UInt8] {
        frame(type: 8, flags: 0, stream: stream, [UInt8(increment >> 24), UInt8(increment >> 16 & 0xff), UInt8(increment >> 8 & 0xff), UInt8(increment & 0xff)])
    }

    /// A `PING` (not an answer) with 8 bytes of `byte`.
    static func ping(_ byte: UInt8 = 1) -> [UInt8] { frame(type: 6, flags: 0, stream: 0, Array(repeating: byte, count: 8)) }

    static func resets(in bytes: [UInt8]) throws -> [(Int32, UInt32)] {
        frames(in: bytes).filter { $0.type == 3 && $0.payload.count == 4 }.map { ($0.stream, word($0.payload, at: 0)) }
    }

    /// The (last stream, error code) of every GOAWAY frame in `bytes`.
    static func goAways(in bytes: [UInt8]) -> [(Int32, UInt32)] {
        frames(in: bytes).filter { $0.type == 7 && $0.payload.count >= 8 }
            .map { (Int32(bitPattern: word($0.payload, at: 0) & 0x7fff_ffff), word($0.payload, at: 4)) }
    }

    /// The frames in `bytes`: type, flags, stream and payload.
    static func frames(in bytes: [UInt8]) -> [(type: UInt8, flags: UInt8, stream: Int32, payload: [UInt8])] {
        var frames: [(type: UInt8, flags: UInt8, stream: Int32, payload: [UInt8])] = []
        var at = 0
        while at + 9 <= bytes.count {
            let length = Int(bytes[at]) << 16 | Int(bytes[at + 1]) << 8 | Int(bytes[at + 2])
            guard at + 9 + length <= bytes.count else { break }
            let stream = Int32(bitPattern: word(bytes, at: at + 5) & 0x7fff_ffff)
            frames.append((bytes[at + 3], bytes[at + 4], stream, Array(bytes[(at + 9)..<(at + 9 + length)])))
            at += 9 + length
        }
        return frames
    }

    private static func word(_ bytes: [UInt8], at p: Int) -> UInt32 {
        UInt32(bytes[p]) << 24 | UInt32(bytes[p + 1]) << 16 | UInt32(bytes[p + 2]) << 8 | UInt32(bytes[p + 3])
    }

    private static func frame(type: UInt8, flags: UInt8, stream: Int32, _ payload: [UInt8]) -> [UInt8] {
        let n = payload.count
        return [UInt8(n >> 16 & 0xff), UInt8(n >> 8 & 0xff), UInt8(n & 0xff), type, flags,
                UInt8(stream >> 24 & 0x7f), UInt8(stream >> 16 & 0xff), UInt8(stream >> 8 & 0xff), UInt8(stream & 0xff)] + payload
    }

    /// An HPACK block of "literal header field never indexed, new name" representations.
    private static func block(_ fields: [(String, String)]) -> [UInt8] {
        var out: [UInt8] = []
        for (name, value) in fields {
            out.append(0x10)
            string(Array(name.utf8), into: &out)
            string(Array(value.utf8), into: &out)
        }
        return out
    }

    /// An HPACK string literal (no Huffman) with its 7-bit-prefix length (RFC 7541 §5.1–5.2).
    private static func string(_ bytes: [UInt8], into out: inout [UInt8]) {
        var length = bytes.count
        if length < 127 {
            out.append(UInt8(length))
        } else {
            out.append(127)
            length -= 127
            while length >= 128 {
                out.append(UInt8(length & 0x7f) | 0x80)
                length >>= 7
            }
            out.append(UInt8(length))
        }
        out += bytes
    }
}
