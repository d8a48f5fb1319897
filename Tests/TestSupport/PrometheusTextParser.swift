import Foundation

/// A strict parser for the Prometheus text exposition format 0.0.4, written independently of
/// the renderer so the tests check the renderer against the format, not against itself.
public struct PrometheusTextParser {
    public struct Sample: Equatable {
        public var name: String
        public var labels: [String: String]
        public var value: Double

        public init(name: String, labels: [String: String], value: Double) {
            self.name = name
            self.labels = labels
            self.value = value
        }

        public static func == (a: Sample, b: Sample) -> Bool {
            a.name == b.name && a.labels == b.labels && (a.value == b.value || (a.value.isNaN && b.value.isNaN))
        }
    }

    public struct Family {
        public var name: String
        public var help: String?
        public var type: String?
        public var samples: [Sample] = []
    }

    public struct ParseError: Error, CustomStringConvertible {
        public var line: Int
        public var message: String
        public var description: String { "line \(line): \(message)" }
    }

    static let types: Set<String> = ["counter", "gauge", "histogram", "summary", "untyped"]

    /// Families in order of first appearance.
    public static func parse(_ text: String) throws -> [Family] {
        if !text.isEmpty, !text.hasSuffix("\n") { throw ParseError(line: 0, message: "text must end with a newline") }
        var families: [Family] = []
        var index: [String: Int] = [:]
        func family(_ name: String) -> Int {
            if let existing = index[name] { return existing }
            families.append(Family(name: name))
            index[name] = families.count - 1
            return families.count - 1
        }
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false).dropLast()
        for (number, line) in lines.enumerated() {
            let lineNumber = number + 1
            func fail(_ message: String) -> ParseError { ParseError(line: lineNumber, message: message) }
            if line.isEmpty { continue }
            if line.hasPrefix("#") {
                let parts = line.split(separator: " ", maxSplits: 3, omittingEmptySubsequences: false)
                guard parts.count >= 3, parts[0] == "#", parts[1] == "HELP" || parts[1] == "TYPE" else { continue }  // a comment
                let name = String(parts[2])
                guard isMetricName(name) else { throw fail("bad metric name in \(parts[1])") }
                let rest = parts.count == 4 ? String(parts[3]) : ""
                let slot = family(name)
                if parts[1] == "HELP" {
                    guard families[slot].help == nil else { throw fail("second HELP for \(name)") }
                    families[slot].help = try unescape(rest, quotes: false).orThrow(fail("bad escape in HELP"))
                } else {
                    guard families[slot].type == nil else { throw fail("second TYPE for \(name)") }
                    guard families[slot].samples.isEmpty else { throw fail("TYPE after samples for \(name)") }
                    guard types.contains(rest) else { throw fail("unknown type '\(rest)'") }
                    families[slot].type = rest
                }
                continue
            }
            let sample = try parseSample(line).orThrow(fail("malformed sample line"))
            let owner = familyName(of: sample, known: families)
            let slot = family(owner)
            if families[slot].type == "histogram" {
                guard sample.name != owner else { throw fail("bare histogram sample") }
                if sample.name.hasSuffix("_bucket") {
                    guard let le = sample.labels["le"], parseValue(le) != nil else { throw fail("bucket without valid le") }
                } else if sample.labels["le"] != nil {
                    throw fail("le label outside a bucket")
                }
            }
            families[slot].samples.append(sample)
        }
        return families
    }

    /// `_bucket`/`_sum`/`_count` samples belong to the histogram (or summary) family they extend.
    private static func familyName(of sample: Sample, known: [Family]) -> String {
        for suffix in ["_bucket", "_sum", "_count"] where sample.name.hasSuffix(suffix) {
            let base = String(sample.name.dropLast(suffix.count))
            if let family = known.first(where: { $0.name == base }), family.type == "histogram" || family.type == "summary" {
                return base
            }
        }
        return sample.name
    }

    static func isMetricName(_ name: String) -> Bool {
        guard let first = name.unicodeScalars.first, first.isASCII,
              first.properties.isAlphabetic || first == "_" || first == ":" else { return false }
        return name.unicodeScalars.allSatisfy { $0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0) || $0 == "_" || $0 == ":") }
    }

    static func isLabelName(_ name: String) -> Bool {
        isMetricName(name) && !name.contains(":")
    }

    /// `name[{labels}] value [timestamp]`.
    static func parseSample(_ line: Substring) -> Sample? {
        var rest = line[...]
        let nameEnd = rest.firstIndex { $0 == "{" || $0 == " " } ?? rest.endIndex
        let name = String(rest[..<nameEnd])
        guard isMetricName(name) else { return nil }
        rest = rest[nameEnd...]
        var labels: [String: String] = [:]
        if rest.first == "{" {
            rest = rest.dropFirst()
            while rest.first != "}" {
                guard let equals = rest.firstIndex(of: "=") else { return nil }
                let labelName = String(rest[..<equals])
                guard isLabelName(labelName), labels[labelName] == nil else { return nil }
                rest = rest[rest.index(after: equals)...]
                guard rest.first == "\"" else { return nil }
                rest = rest.dropFirst()
                var raw = ""
                var escaped = false
                var closed = false
                while let character = rest.first {
                    rest = rest.dropFirst()
                    if escaped { raw.append("\\"); raw.append(character); escaped = false; continue }
                    if character == "\\" { escaped = true; continue }
                    if character == "\"" { closed = true; break }
                    raw.append(character)
                }
                guard closed, let value = unescape(raw, quotes: true) else { return nil }
                labels[labelName] = value
                if rest.first == "," { rest = rest.dropFirst() } else if rest.first != "}" { return nil }
            }
            rest = rest.dropFirst()
        }
        guard rest.first == " " else { return nil }
        let fields = rest.split(separator: " ")
        guard fields.count == 1 || fields.count == 2, let value = parseValue(String(fields[0])) else { return nil }
        if fields.count == 2, Int64(fields[1]) == nil { return nil }
        return Sample(name: name, labels: labels, value: value)
    }

    /// Go ParseFloat-compatible subset: `+Inf`, `-Inf`, `NaN`, decimal with optional exponent.
    public static func parseValue(_ text: String) -> Double? {
        switch text {
        case "+Inf", "Inf": return .infinity
        case "-Inf": return -.infinity
        case "NaN": return .nan
        default:
            guard text.range(of: #"^[+-]?([0-9]+(\.[0-9]*)?|\.[0-9]+)([eE][+-]?[0-9]+)?$"#, options: .regularExpression) != nil
            else { return nil }
            return Double(text)
        }
    }

    /// Undoes `\\`, `\n` (and `\"` in label values); any other escape is malformed.
    static func unescape(_ text: String, quotes: Bool) -> String? {
        var out = ""
        var iterator = text.makeIterator()
        while let character = iterator.next() {
            guard character == "\\" else {
                if character == "\n" { return nil }
                out.append(character)
                continue
            }
            switch iterator.next() {
            case "\\": out.append("\\")
            case "n": out.append("\n")
            case "\"" where quotes: out.append("\"")
            default: return nil
            }
        }
        return out
    }
}

extension Optional {
    func orThrow(_ error: @autoclosure () -> some Error) throws -> Wrapped {
        guard let self else { throw error() }
        return self
    }
}
