/// Where WebSocket frames end in one direction of an upgraded connection (RFC 6455 §5.2), so
/// that the sidecar can put a frame of its own between two of the peer's: the `1001 Going Away`
/// close that ends a connection at the route's `maxUpgradedLifetime`.
///
/// Only frame headers are read (2 to 14 bytes at each boundary); payloads pass uncopied.
/// Nothing is validated beyond what finding the next header needs.
struct WebSocketFrameCursor: Equatable {
    /// What the bytes at a boundary say.
    enum Header: Equatable {
        /// The header is not complete yet: wait for more bytes.
        case needMore
        /// A frame of this many bytes, header and payload together, starts here.
        case frame(length: Int)
        /// Not a frame a peer may send (a 64-bit length with its top bit set, or one beyond what
        /// this process can count): stop looking for boundaries.
        case malformed
    }

    /// The longest frame header: 2 bytes, a 64-bit extended length, a masking key.
    static let maxHeaderLength = 14

    /// Bytes left of the frame under way; 0 at a boundary.
    private(set) var remaining = 0

    /// Whether the next byte starts a frame.
    var atBoundary: Bool { remaining == 0 }

    /// At a boundary: reads the header at the start of `bytes` (up to ``maxHeaderLength`` of
    /// them) and, for a whole header, starts that frame.
    mutating func begin(_ bytes: [UInt8]) -> Header {
        let header = Self.header(bytes)
        if case .frame(let length) = header { remaining = length }
        return header
    }

    /// `count` bytes of the frame under way were relayed (at most ``remaining``).
    mutating func advance(_ count: Int) {
        remaining -= min(count, remaining)
    }

    /// The frame length announced by `bytes`, which start at a boundary.
    static func header(_ bytes: [UInt8]) -> Header {
        guard bytes.count >= 2 else { return .needMore }
        let masked = bytes[1] & 0x80 != 0
        let short = Int(bytes[1] & 0x7F)
        let extended = short == 126 ? 2 : short == 127 ? 8 : 0
        let headerLength = 2 + extended + (masked ? 4 : 0)
        guard bytes.count >= 2 + extended else { return .needMore }
        var payload: UInt64 = short < 126 ? UInt64(short) : 0
        for index in 0..<extended { payload = payload << 8 | UInt64(bytes[2 + index]) }
        // RFC 6455 §5.2: the most significant bit of a 64-bit length must be 0.
        guard payload < UInt64(Int.max - headerLength) else { return .malformed }
        return .frame(length: headerLength + Int(payload))
    }

    /// A close frame as a server sends it (unmasked, RFC 6455 §5.5.1) with `code` and no reason.
    static func closeFrame(code: UInt16) -> [UInt8] {
        [0x88, 0x02, UInt8(code >> 8), UInt8(code & 0xFF)]
    }
}
