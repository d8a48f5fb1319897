import HTTP1

/// The chunked-decoder fuzz check: decoding a body from one buffer and decoding it as it
/// arrives a few bytes at a time give the same data, the same trailers, the same end and the
/// same verdict; and the decoder never claims more bytes than it was shown.
public enum ChunkedCheck {
    /// What decoding produced.
    struct Outcome: Equatable {
        var data: [UInt8] = []
        var consumed = 0
        var trailers: HTTPFields?
        var failed = false
        var problems: [String] = []
    }

    /// The violated properties (empty when all hold).
    public static func run(_ input: FuzzInput) -> [String] {
        let whole = decode(input.message, prefixes: [input.message.count])
        let incremental = decode(input.message, prefixes: input.prefixLengths)
        var problems = whole.problems + incremental.problems
        if whole.data != incremental.data || whole.consumed != incremental.consumed
            || whole.trailers != incremental.trailers || whole.failed != incremental.failed {
            problems.append("whole input: \(summary(whole)); reads of \(input.readSize): \(summary(incremental))")
        }
        return problems
    }

    /// Decodes with the bytes becoming available in steps (each a prefix length of `bytes`).
    static func decode(_ bytes: [UInt8], prefixes: [Int]) -> Outcome {
        var decoder = ChunkedDecoder()
        var outcome = Outcome()
        var position = 0
        for available in prefixes {
            while true {
                let result: Result<ChunkedDecoder.Step, HTTPParseError> = bytes.withUnsafeBytes { buffer in
                    Result { () throws(HTTPParseError) in
                        try decoder.next(UnsafeRawBufferPointer(rebasing: buffer[position..<available]))
                    }
                }
                guard case .success(let step) = result else {
                    outcome.failed = true
                    outcome.consumed = position
                    return outcome
                }
                let shown = available - position
                switch step {
                case .needMore:
                    break
                case .chunkHeader(_, let consumed), .chunkEnd(let consumed):
                    if consumed <= 0 || consumed > shown { outcome.problems.append("\(step) claims \(consumed) of \(shown) bytes") }
                    position += min(max(consumed, 0), shown)
                    continue
                case .data(let remaining):
                    let n = Int(min(remaining, UInt64(shown)))
                    if n == 0 { break }
                    outcome.data += bytes[position..<(position + n)]
                    decoder.consumeData(n)
                    position += n
                    continue
                case .end(let consumed, let trailers):
                    if consumed <= 0 || consumed > shown { outcome.problems.append("end claims \(consumed) of \(shown) bytes") }
                    position += min(max(consumed, 0), shown)
                    outcome.trailers = trailers
                    outcome.consumed = position
                    return outcome
                }
                break
            }
        }
        outcome.consumed = position
        return outcome
    }

    static func summary(_ outcome: Outcome) -> String {
        "\(outcome.data.count) data bytes, consumed \(outcome.consumed), "
            + (outcome.failed ? "failed" : outcome.trailers == nil ? "incomplete" : "ended")
    }
}
