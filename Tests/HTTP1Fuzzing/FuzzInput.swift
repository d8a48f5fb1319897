/// How a fuzz input is split into reads: the first byte chooses the read size (1…16 bytes),
/// so libFuzzer explores both the message and how it arrives, and every check can compare
/// "all at once" with "a few bytes at a time".
public struct FuzzInput: Sendable {
    /// The message bytes (the input after its first byte).
    public let message: [UInt8]
    /// Bytes per simulated read, 1…16.
    public let readSize: Int
    /// The first byte itself, for checks that derive more choices from it.
    public let selector: UInt8

    /// Splits a raw fuzz input; an empty input gives an empty message read 1 byte at a time.
    public init(_ raw: [UInt8]) {
        selector = raw.first ?? 0
        readSize = Int(selector & 0x0F) + 1
        message = Array(raw.dropFirst())
    }

    /// The raw form of `message` read `readSize` bytes at a time (for seed corpora).
    public static func encode(_ message: [UInt8], selector: UInt8 = 0) -> [UInt8] {
        [selector] + message
    }

    /// The prefix lengths a reader would see: `readSize`, `2·readSize`, … up to the whole message.
    public var prefixLengths: [Int] {
        guard !message.isEmpty else { return [0] }
        return Array(stride(from: min(readSize, message.count), to: message.count, by: readSize)) + [message.count]
    }
}
