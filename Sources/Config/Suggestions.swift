/// "Did you mean" suggestions for misspelled keys and values.
enum Suggestions {
    /// The candidate closest to `text` within edit distance 2 (compared
    /// case-insensitively), or nil. Ties go to the earlier candidate.
    static func closest(to text: String, in candidates: [String]) -> String? {
        let lowered = Array(text.lowercased().unicodeScalars)
        var best: (candidate: String, distance: Int)?
        for candidate in candidates {
            let distance = editDistance(lowered, Array(candidate.lowercased().unicodeScalars))
            // Don't suggest a completely different short word ("id" -> "host").
            guard distance <= 2, distance < max(lowered.count, 1) else { continue }
            if distance < (best?.distance ?? Int.max) {
                best = (candidate, distance)
            }
        }
        return best?.candidate
    }

    /// Levenshtein distance (insert, delete, substitute).
    static func editDistance(_ a: [Unicode.Scalar], _ b: [Unicode.Scalar]) -> Int {
        if a.isEmpty { return b.count }
        if b.isEmpty { return a.count }
        var previous = Array(0...b.count)
        var current = [Int](repeating: 0, count: b.count + 1)
        for i in 1...a.count {
            current[0] = i
            for j in 1...b.count {
                let cost = a[i - 1] == b[j - 1] ? 0 : 1
                current[j] = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + cost)
            }
            swap(&previous, &current)
        }
        return previous[b.count]
    }
}
