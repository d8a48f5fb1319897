import Yams

extension ConfigDecoder {
    /// `type: aws`: `placeholderAccessKeyId` (16–128 letters and digits, as AWS key ids are) and
    /// the files of the real credentials (`accessKeyIdFile`, `secretAccessKeyFile`, optional
    /// `sessionTokenFile`), resolved against the config file's directory.
    mutating func decodeAWS(_ fields: [String: Node], path: String, node: Node) -> AWSCredentialConfig? {
        var valid = true
        var placeholder: String?
        let placeholderPath = Self.join(path, "placeholderAccessKeyId")
        switch string(fields["placeholderAccessKeyId"], path: placeholderPath) {
        case .absent:
            report(placeholderPath, "required key is missing: the access key id the app signs with (e.g. AKIDTOKENSIDECAR0001)", at: node)
            valid = false
        case .invalid: valid = false
        case .value(let text):
            if (16...128).contains(text.count), text.unicodeScalars.allSatisfy({ $0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0)) }) {
                placeholder = text
            } else {
                report(placeholderPath, "must be 16 to 128 letters and digits, as an access key id is", at: fields["placeholderAccessKeyId"])
                valid = false
            }
        }
        var files: [String: String] = [:]
        for key in ["accessKeyIdFile", "secretAccessKeyFile", "sessionTokenFile"] {
            let keyPath = Self.join(path, key)
            switch string(fields[key], path: keyPath) {
            case .absent:
                if key != "sessionTokenFile" {
                    report(keyPath, "required key is missing: the file holding the real \(key == "accessKeyIdFile" ? "access key id" : "secret access key")", at: node)
                    valid = false
                }
            case .invalid: valid = false
            case .value(let text):
                guard !text.isEmpty else {
                    report(keyPath, "is empty; expected a file path", at: fields[key])
                    valid = false
                    continue
                }
                files[key] = resolve(path: text)
            }
        }
        guard valid, let placeholder, let id = files["accessKeyIdFile"], let secret = files["secretAccessKeyFile"] else { return nil }
        return AWSCredentialConfig(placeholderAccessKeyId: placeholder, accessKeyIdFile: id, secretAccessKeyFile: secret,
                                   sessionTokenFile: files["sessionTokenFile"])
    }
}
