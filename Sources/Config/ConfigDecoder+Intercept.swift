import Foundation
import Yams

extension ConfigDecoder {
    /// `intercept:` — nil when absent (or invalid; the problems are reported). Files the sidecar
    /// writes must have a writable directory, files it reads must be readable: found now, so
    /// `check` and `run` exit 2 naming the key.
    mutating func decodeIntercept(_ node: Node?) -> InterceptConfig? {
        guard let node, !Self.isNull(node) else { return nil }
        let path = "intercept"
        guard let entries = mapping(node, path: path, expected: "a mapping with caCertFile") else { return nil }
        checkKeys(entries, allowed: ConfigKeys.intercept, path: path)
        let fields = Self.index(entries)
        var valid = true
        let keyFile = filePath(fields["caKeyFile"], path: "intercept.caKeyFile", valid: &valid)
        let certFile = filePath(fields["caCertFile"], path: "intercept.caCertFile", valid: &valid)
        let bundleFile = filePath(fields["bundleFile"], path: "intercept.bundleFile", valid: &valid)
        if fields["caCertFile"] == nil {
            report("intercept.caCertFile", "required key is missing: where the CA certificate apps trust is written (e.g. /run/token-sidecar/ca.crt)", at: node)
            valid = false
        }
        if let certFile {
            if keyFile != nil {
                valid = readable(certFile, path: "intercept.caCertFile", node: fields["caCertFile"]) && valid
            } else {
                valid = writableDirectory(of: certFile, path: "intercept.caCertFile", node: fields["caCertFile"]) && valid
            }
        }
        if let keyFile { valid = readable(keyFile, path: "intercept.caKeyFile", node: fields["caKeyFile"]) && valid }
        if let bundleFile {
            valid = writableDirectory(of: bundleFile, path: "intercept.bundleFile", node: fields["bundleFile"]) && valid
        }
        var validity = Duration.seconds(30 * 24 * 3600)
        if case .value(let given) = duration(fields["caValidity"], path: "intercept.caValidity") {
            if given < .seconds(3600) {
                report("intercept.caValidity", "must be at least 1h", at: fields["caValidity"])
                valid = false
            }
            validity = given
        }
        guard valid, let certFile else { return nil }
        return InterceptConfig(caCertFile: certFile, caKeyFile: keyFile, bundleFile: bundleFile, caValidity: validity)
    }

    private mutating func filePath(_ node: Node?, path: String, valid: inout Bool) -> String? {
        switch string(node, path: path) {
        case .absent: return nil
        case .invalid:
            valid = false
            return nil
        case .value(let text):
            guard !text.isEmpty else {
                report(path, "is empty; expected a file path", at: node)
                valid = false
                return nil
            }
            return resolve(path: text)
        }
    }

    private mutating func readable(_ file: String, path: String, node: Node?) -> Bool {
        guard access(file, R_OK) == 0 else {
            report(path, "cannot read \(file): \(String(cString: strerror(errno)))", at: node)
            return false
        }
        return true
    }

    private mutating func writableDirectory(of file: String, path: String, node: Node?) -> Bool {
        let directory = (file as NSString).deletingLastPathComponent
        let dir = directory.isEmpty ? "." : directory
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: dir, isDirectory: &isDirectory), isDirectory.boolValue else {
            report(path, "the directory \(dir) does not exist; create it (e.g. an emptyDir the app also mounts)", at: node)
            return false
        }
        guard access(dir, W_OK) == 0 else {
            report(path, "the directory \(dir) is not writable: the sidecar writes this file at every start", at: node)
            return false
        }
        return true
    }
}
