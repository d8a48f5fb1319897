/// ASCII case folding of field names: only `A`–`Z` change (`x | 0x20` would also turn `_`
/// into DEL and `^` into `~`).
enum ASCIICase {
    /// `byte` lowercased when it is an ASCII capital letter.
    @inline(__always)
    static func lower(_ byte: UInt8) -> UInt8 { byte >= 0x41 && byte <= 0x5A ? byte | 0x20 : byte }
}
