/// Renders metric families in the Prometheus text exposition format, version 0.0.4.
///
/// Per family: `# HELP` (with `\` and newline escaped), `# TYPE`, then one line per sample —
/// `name{label="value",...} value` with `\`, `"` and newline escaped in label values.
/// Histograms become `name_bucket{...,le="…"}` lines (cumulative, ending with `le="+Inf"`),
/// `name_sum` and `name_count`. Invalid characters in metric and label names are rendered as
/// `_`, so a bad name cannot break the whole page.
public enum PrometheusRenderer {
    /// The `Content-Type` of the rendered text.
    public static let contentType = "text/plain; version=0.0.4; charset=utf-8"

    /// The exposition text for `families`, in the given order.
    public static func render(_ families: [MetricFamily]) -> String {
        var out = ""
        out.reserveCapacity(families.count * 256)
        for family in families {
            let name = metricName(family.name)
            out += "# HELP \(name) \(escapeHelp(family.help))\n"
            out += "# TYPE \(name) \(family.type.rawValue)\n"
            switch family.type {
            case .counter, .gauge:
                for sample in family.samples {
                    appendLine(&out, name, sample.labels, format(sample.value))
                }
            case .histogram:
                for histogram in family.histograms {
                    appendHistogram(&out, name, histogram)
                }
            }
        }
        return out
    }

    private static func appendHistogram(_ out: inout String, _ name: String, _ histogram: HistogramSample) {
        let labels = histogram.labels.filter { $0.name != "le" }
        // The `+Inf` bucket is written once, from the count, whatever buckets the sample holds.
        for bucket in histogram.buckets where bucket.upperBound.isFinite {
            appendLine(&out, name + "_bucket", labels + [MetricLabel("le", format(bucket.upperBound))],
                       String(bucket.cumulativeCount))
        }
        appendLine(&out, name + "_bucket", labels + [MetricLabel("le", "+Inf")], String(histogram.count))
        appendLine(&out, name + "_sum", labels, format(histogram.sum))
        appendLine(&out, name + "_count", labels, String(histogram.count))
    }

    private static func appendLine(_ out: inout String, _ name: String, _ labels: [MetricLabel], _ value: String) {
        out += name
        if !labels.isEmpty {
            out += "{"
            for (index, label) in labels.enumerated() {
                if index > 0 { out += "," }
                out += labelName(label.name)
                out += "=\""
                out += escapeLabelValue(label.value)
                out += "\""
            }
            out += "}"
        }
        out += " "
        out += value
        out += "\n"
    }

    /// A sample value: integers without a fraction, `+Inf`, `-Inf`, `NaN`, otherwise the
    /// shortest representation that reads back as the same double (Go's ParseFloat accepts it).
    public static func format(_ value: Double) -> String {
        if value.isNaN { return "NaN" }
        if value.isInfinite { return value > 0 ? "+Inf" : "-Inf" }
        // Exact integers print without ".0"; 2^53 bounds where every integer is representable.
        if value == value.rounded(), abs(value) < 9_007_199_254_740_992 {
            return String(Int64(value))
        }
        return value.description
    }

    /// `[a-zA-Z_:][a-zA-Z0-9_:]*`, other characters replaced by `_`.
    static func metricName(_ name: String) -> String {
        sanitize(name, allowColon: true)
    }

    /// `[a-zA-Z_][a-zA-Z0-9_]*`, other characters replaced by `_`.
    static func labelName(_ name: String) -> String {
        sanitize(name, allowColon: false)
    }

    private static func sanitize(_ name: String, allowColon: Bool) -> String {
        if name.isEmpty { return "_" }
        var bytes = Array(name.utf8)
        for index in bytes.indices {
            let byte = bytes[index]
            let letter = (byte | 0x20) >= UInt8(ascii: "a") && (byte | 0x20) <= UInt8(ascii: "z")
            let digit = byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9")
            let ok = letter || byte == UInt8(ascii: "_") || (allowColon && byte == UInt8(ascii: ":")) || (digit && index > 0)
            if !ok { bytes[index] = UInt8(ascii: "_") }
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// HELP text escapes `\` and newline.
    static func escapeHelp(_ text: String) -> String {
        escape(text, quotes: false)
    }

    /// Label values escape `\`, `"` and newline.
    static func escapeLabelValue(_ text: String) -> String {
        escape(text, quotes: true)
    }

    private static func escape(_ text: String, quotes: Bool) -> String {
        guard text.utf8.contains(where: { $0 == 0x5C || $0 == 0x0A || (quotes && $0 == 0x22) }) else { return text }
        var out = ""
        for character in text.unicodeScalars {
            switch character {
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\"" where quotes: out += "\\\""
            default: out.unicodeScalars.append(character)
            }
        }
        return out
    }
}
