extension ConfigDecoder {
    /// Reports `grant`, `subjectTokenFile` and `subjectTokenType` on a credential that is not
    /// `oauth2` (only an `oauth2` credential has a grant); returns the other entries, for the
    /// unknown-key check.
    mutating func rejectGrantKeys(_ entries: [Entry], type: String, path: String) -> [Entry] {
        var others: [Entry] = []
        for entry in entries {
            guard ConfigKeys.grant.contains(entry.key) else {
                others.append(entry)
                continue
            }
            report(Self.join(path, entry.key), "only an oauth2 credential has a grant (token exchange); this one is type: \(type)", line: entry.line)
        }
        return others
    }
}
