import Foundation
import Yams

extension ConfigDecoder {
    /// `type: google_service_account`: `keyFile` (required; read now, so a missing or unusable
    /// file fails at load, naming what is wrong but never the key), exactly one of `scope` and
    /// `targetAudience`, optional `subject`, renewal timing and TLS to the token server.
    mutating func decodeGoogleServiceAccount(_ fields: [String: Node], path: String, node: Node) -> GoogleServiceAccountConfig? {
        var valid = true
        let filePath = Self.join(path, "keyFile")
        var keyFile: String?
        switch string(fields["keyFile"], path: filePath) {
        case .absent:
            report(filePath, "required key is missing: the service account's JSON key file (with private_key, client_email, token_uri)", at: node)
            valid = false
        case .invalid:
            valid = false
        case .value(let text):
            let resolved = resolve(path: text)
            if text.isEmpty {
                report(filePath, "is empty; expected the path of the service account's JSON key file", at: fields["keyFile"])
                valid = false
            } else if let problem = Self.googleKeyFileProblem(resolved) {
                report(filePath, problem, at: fields["keyFile"])
                valid = false
            } else {
                keyFile = resolved
            }
        }
        var texts: [String: String] = [:]
        for key in ["scope", "targetAudience", "subject"] {
            switch plainText(fields[key], path: Self.join(path, key)) {
            case .absent: break
            case .invalid: valid = false
            case .value(let text): texts[key] = text
            }
        }
        let given = ["scope", "targetAudience"].filter { fields[$0].map { !Self.isNull($0) } ?? false }
        if given.count != 1 {
            let found = given.isEmpty ? "none is given" : "found scope and targetAudience"
            report(path, "a google_service_account credential needs exactly one of scope (an access token) or targetAudience (an ID token); \(found)", at: node)
            valid = false
        }
        let fetch = decodeFetchSettings(fields, path: path)
        let tls = decodeTLSSettings(fields, path: path)
        guard valid, let keyFile, let fetch, let settings = tls.settings else { return nil }
        return GoogleServiceAccountConfig(keyFile: keyFile, scope: texts["scope"], targetAudience: texts["targetAudience"],
                                          subject: texts["subject"], fetch: fetch, tls: settings)
    }

    /// Why the file at `path` is not a service-account key Google's libraries would take, or
    /// nil. Names the field at fault, never a value of it.
    static func googleKeyFileProblem(_ path: String) -> String? {
        guard let data = FileManager.default.contents(atPath: path) else { return "\(path) cannot be read" }
        guard let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any] else {
            return "\(path) is not a JSON object (expected a service account key file)"
        }
        if let type = object["type"] as? String, type != "service_account" {
            return "\(path) is a key of type \(LogSafeName.of(type)), not service_account"
        }
        for field in ["private_key", "client_email", "token_uri"] where (object[field] as? String)?.isEmpty ?? true {
            return "\(path) has no \(field)"
        }
        if let uri = object["token_uri"] as? String, !(uri.hasPrefix("https://") || uri.hasPrefix("http://")) {
            return "\(path): token_uri is not an http(s) URL"
        }
        return nil
    }
}

/// A value from a file safe to put in a message: short, printable.
enum LogSafeName {
    /// At most 40 visible ASCII characters of `text`.
    static func of(_ text: String) -> String {
        String(String.UnicodeScalarView(text.unicodeScalars.filter { $0.isASCII && $0.value > 0x20 && $0.value < 0x7F }.prefix(40)))
    }
}
