import Crypto

/// The SHA-256 of `bytes` in lowercase hex, as `sha256sum` prints it.
func sha256Hex(_ bytes: [UInt8]) -> String {
    let digits = Array("0123456789abcdef".utf8)
    var hex: [UInt8] = []
    for byte in Digest.sha256(bytes) { hex += [digits[Int(byte >> 4)], digits[Int(byte & 0xF)]] }
    return String(decoding: hex, as: UTF8.self)
}
