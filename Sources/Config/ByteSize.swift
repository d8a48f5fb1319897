import Foundation

/// Byte counts written as an integer or with a binary unit: `1048576`, `512KiB`, `64MiB`,
/// `1GiB` (also `K`, `M`, `G`, meaning the same powers of 1024).
enum ByteSize {
    private static let units: [(suffixes: [String], factor: Int)] = [
        (["GiB", "G"], 1 << 30), (["MiB", "M"], 1 << 20), (["KiB", "K"], 1 << 10), (["B", ""], 1),
    ]

    /// The number of bytes `text` means, or nil when it is not a size (or overflows).
    static func parse(_ text: String) -> Int? {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        for unit in units {
            for suffix in unit.suffixes where trimmed.hasSuffix(suffix) {
                let number = trimmed.dropLast(suffix.count).trimmingCharacters(in: .whitespaces)
                guard !number.isEmpty, number.allSatisfy(\.isASCII), let value = Int(number), value >= 0 else { continue }
                let (bytes, overflow) = value.multipliedReportingOverflow(by: unit.factor)
                return overflow ? nil : bytes
            }
        }
        return nil
    }

    /// `bytes` in the largest unit that divides it (`1GiB`, `1536KiB`, `1000`).
    static func format(_ bytes: Int) -> String {
        for unit in units where unit.factor > 1 && bytes > 0 && bytes % unit.factor == 0 {
            return "\(bytes / unit.factor)\(unit.suffixes[0])"
        }
        return "\(bytes)"
    }
}
