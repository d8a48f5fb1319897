import AWSSigning
import Foundation

/// Temporary AWS credentials as their endpoints answer: STS's `AssumeRoleWithWebIdentity`
/// (XML: `<Credentials><AccessKeyId>…<SecretAccessKey>…<SessionToken>…<Expiration>…`) or a
/// container credentials endpoint (JSON: `AccessKeyId`, `SecretAccessKey`, `Token`,
/// `Expiration`). Problems name the field, never a value.
public struct AWSCredentialsAnswer: Sendable, Equatable {
    /// The credentials.
    public let credentials: SigV4Credentials
    /// When they expire, in seconds since 1970.
    public let expiration: Double

    /// Why an answer is not usable.
    public struct Problem: Error, Equatable, CustomStringConvertible {
        /// What is wrong, naming the field.
        public let description: String
    }

    /// The answer in `body` (XML when it starts with `<`, else JSON).
    public static func parse(_ body: [UInt8]) -> Result<AWSCredentialsAnswer, Problem> {
        let text = String(decoding: body, as: UTF8.self)
        let fields: [String: String]
        if text.drop(while: \.isWhitespace).hasPrefix("<") {
            guard let credentials = element("Credentials", in: text) else { return .failure(Problem(description: "the answer has no Credentials")) }
            var found: [String: String] = [:]
            for name in ["AccessKeyId", "SecretAccessKey", "SessionToken", "Expiration"] { found[name] = element(name, in: credentials).map(unescape) }
            fields = found
        } else {
            guard let object = try? JSONSerialization.jsonObject(with: Data(body)) as? [String: Any] else {
                return .failure(Problem(description: "the answer is neither STS XML nor a JSON object"))
            }
            var found: [String: String] = [:]
            for (name, key) in [("AccessKeyId", "AccessKeyId"), ("SecretAccessKey", "SecretAccessKey"), ("SessionToken", "Token"),
                                ("Expiration", "Expiration")] {
                found[name] = object[key] as? String
            }
            fields = found
        }
        for name in ["AccessKeyId", "SecretAccessKey", "Expiration"] where (fields[name] ?? "").isEmpty {
            return .failure(Problem(description: "the answer's \(name) is missing"))
        }
        for name in ["AccessKeyId", "SecretAccessKey", "SessionToken"] {
            guard let value = fields[name], !value.isEmpty else { continue }
            guard value.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F && $0 != UInt8(ascii: ";") }) else {
                return .failure(Problem(description: "the answer's \(name) holds characters a key never does"))
            }
        }
        guard let expiration = timestamp(fields["Expiration"] ?? "") else {
            return .failure(Problem(description: "the answer's Expiration is not an ISO 8601 time"))
        }
        let session = fields["SessionToken"].flatMap { $0.isEmpty ? nil : $0 }
        return .success(AWSCredentialsAnswer(credentials: SigV4Credentials(accessKeyId: fields["AccessKeyId"]!, secretAccessKey: fields["SecretAccessKey"]!,
                                                                            sessionToken: session),
                                             expiration: expiration))
    }

    /// The `<Code>` of an AWS XML error answer (`InvalidIdentityToken`, `AccessDenied`), or the
    /// `code` / `Code` of a JSON one.
    public static func errorCode(_ body: [UInt8]) -> String? {
        let text = String(decoding: body, as: UTF8.self)
        if let code = element("Code", in: text), !code.isEmpty { return code }
        if let object = try? JSONSerialization.jsonObject(with: Data(body)) as? [String: Any] {
            return (object["Code"] ?? object["code"]) as? String
        }
        return nil
    }

    /// The text between `<name>` and `</name>` (the first such element).
    static func element(_ name: String, in text: String) -> String? {
        guard let open = text.range(of: "<\(name)>"), let close = text.range(of: "</\(name)>", range: open.upperBound..<text.endIndex) else { return nil }
        return String(text[open.upperBound..<close.lowerBound]).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// XML's five predefined entities, decoded.
    static func unescape(_ text: String) -> String {
        guard text.contains("&") else { return text }
        return text.replacingOccurrences(of: "&lt;", with: "<").replacingOccurrences(of: "&gt;", with: ">")
            .replacingOccurrences(of: "&quot;", with: "\"").replacingOccurrences(of: "&apos;", with: "'")
            .replacingOccurrences(of: "&amp;", with: "&")
    }

    /// `2026-11-28T13:00:00Z` (fractions and offsets allowed), in seconds since 1970.
    static func timestamp(_ text: String) -> Double? {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        if let date = formatter.date(from: text) { return date.timeIntervalSince1970 }
        formatter.formatOptions = [.withInternetDateTime]
        return formatter.date(from: text)?.timeIntervalSince1970
    }
}
