/// The field names most responses carry, spelled lowercase as HTTP/2 sends them (RFC 9113
/// §8.2.1). A head's name found here goes to nghttp2 as the constant (`NGHTTP2_NV_FLAG_NO_COPY_NAME`:
/// it lives as long as the process), so nghttp2 neither copies nor lowercases it byte by byte,
/// as it does every other name it takes. Only the name: the value still comes from the head.
enum CommonFieldNames {
    /// `name` in lowercase when it is one of the common names (compared ignoring ASCII case:
    /// only letters fold), else nil.
    ///
    /// By length and first letter, then two word loads per name rather than a byte loop: each
    /// case's constants are the name's first and last 2, 4 or 8 bytes as a little-endian word
    /// (overlapping when the name is shorter than two words), and a mask with `0x20` on the
    /// letters, which ORed into the loaded bytes folds their case and nothing else's (`-` is
    /// compared exactly: `CR | 0x20` is `-`).
    static func lowercase(_ name: UnsafeRawBufferPointer) -> StaticString? {
        let count = name.count
        guard count >= 3, count <= 16, let p = name.baseAddress else { return nil }
        let candidate: StaticString
        let same: Bool
        switch (count, p.load(as: UInt8.self) | 0x20) {
        case (3, 0x76): candidate = "via"; same = matches(p, 3, UInt16(0x6976), 0x2020, 0x6169, 0x2020)
        case (4, 0x64): candidate = "date"; same = matches(p, 4, UInt32(0x6574_6164), 0x2020_2020, 0x6574_6164, 0x2020_2020)
        case (4, 0x65): candidate = "etag"; same = matches(p, 4, UInt32(0x6761_7465), 0x2020_2020, 0x6761_7465, 0x2020_2020)
        case (4, 0x76): candidate = "vary"; same = matches(p, 4, UInt32(0x7972_6176), 0x2020_2020, 0x7972_6176, 0x2020_2020)
        case (6, 0x73): candidate = "server"; same = matches(p, 6, UInt32(0x7672_6573), 0x2020_2020, 0x7265_7672, 0x2020_2020)
        case (7, 0x65): candidate = "expires"; same = matches(p, 7, UInt32(0x6970_7865), 0x2020_2020, 0x7365_7269, 0x2020_2020)
        case (8, 0x6C):
            candidate = "location"
            same = matches(p, 8, UInt64(0x6E6F_6974_6163_6F6C), 0x2020_2020_2020_2020, 0x6E6F_6974_6163_6F6C, 0x2020_2020_2020_2020)
        case (10, 0x73):
            candidate = "set-cookie"
            same = matches(p, 10, UInt64(0x6B6F_6F63_2D74_6573), 0x2020_2020_0020_2020, 0x6569_6B6F_6F63_2D74, 0x2020_2020_2020_0020)
        case (12, 0x63):
            candidate = "content-type"
            same = matches(p, 12, UInt64(0x2D74_6E65_746E_6F63), 0x0020_2020_2020_2020, 0x6570_7974_2D74_6E65, 0x2020_2020_0020_2020)
        case (12, 0x70):
            candidate = "proxy-status"
            same = matches(p, 12, UInt64(0x7473_2D79_786F_7270), 0x2020_0020_2020_2020, 0x7375_7461_7473_2D79, 0x2020_2020_2020_0020)
        case (13, 0x61):
            candidate = "accept-ranges"
            same = matches(p, 13, UInt64(0x722D_7470_6563_6361), 0x2000_2020_2020_2020, 0x7365_676E_6172_2D74, 0x2020_2020_2020_0020)
        case (13, 0x63):
            candidate = "cache-control"
            same = matches(p, 13, UInt64(0x6F63_2D65_6863_6163), 0x2020_0020_2020_2020, 0x6C6F_7274_6E6F_632D, 0x2020_2020_2020_2000)
        case (13, 0x6C):
            candidate = "last-modified"
            same = matches(p, 13, UInt64(0x646F_6D2D_7473_616C), 0x2020_2000_2020_2020, 0x6465_6966_6964_6F6D, 0x2020_2020_2020_2020)
        case (14, 0x63):
            candidate = "content-length"
            same = matches(p, 14, UInt64(0x2D74_6E65_746E_6F63), 0x0020_2020_2020_2020, 0x6874_676E_656C_2D74, 0x2020_2020_2020_0020)
        case (16, 0x63):
            candidate = "content-encoding"
            same = matches(p, 16, UInt64(0x2D74_6E65_746E_6F63), 0x0020_2020_2020_2020, 0x676E_6964_6F63_6E65, 0x2020_2020_2020_2020)
        default: return nil
        }
        return same ? candidate : nil
    }

    /// Whether the `count` bytes at `p` (one to two words) are `first` and `last` (their first
    /// and last word, little-endian) once the letters the masks mark are folded.
    @inline(__always)
    private static func matches<Word: FixedWidthInteger & UnsignedInteger>(_ p: UnsafeRawPointer, _ count: Int, _ first: Word,
                                                                         _ firstFold: Word, _ last: Word, _ lastFold: Word) -> Bool {
        Word(littleEndian: p.loadUnaligned(as: Word.self)) | firstFold == first
            && Word(littleEndian: p.loadUnaligned(fromByteOffset: count - MemoryLayout<Word>.size, as: Word.self)) | lastFold == last
    }
}
