import HTTP1

/// What a head scanner makes of some bytes: a complete head of some length, a need for more,
/// or an error. Compared between whole and incremental scans.
enum HeadOutcome: Equatable, CustomStringConvertible {
    case complete(Int)
    case needMore
    case failed(String)

    /// Scans `bytes` in one call.
    static func scanWhole(_ bytes: [UInt8], limit: Int) -> HeadOutcome {
        var scanner = HeadScanner(limit: limit)
        return bytes.withUnsafeBytes { buffer in
            do throws(HTTPParseError) {
                return try scanner.scan(buffer).map { .complete($0) } ?? .needMore
            } catch {
                return .failed(String(describing: error))
            }
        }
    }

    /// Scans the growing prefixes of `bytes`, as a server reading a socket does.
    static func scanIncrementally(_ bytes: [UInt8], prefixes: [Int], limit: Int) -> HeadOutcome {
        var scanner = HeadScanner(limit: limit)
        for length in prefixes {
            let outcome: HeadOutcome = bytes.withUnsafeBytes { buffer in
                do throws(HTTPParseError) {
                    return try scanner.scan(UnsafeRawBufferPointer(rebasing: buffer[0..<length])).map { .complete($0) } ?? .needMore
                } catch {
                    return .failed(String(describing: error))
                }
            }
            if outcome != .needMore { return outcome }
        }
        return .needMore
    }

    var description: String {
        switch self {
        case .complete(let n): return "complete(\(n))"
        case .needMore: return "needMore"
        case .failed(let why): return "failed(\(why))"
        }
    }
}
