import Crypto
import EventLoop
import Foundation
import TestSupport
import TokenManager
import XCTest

/// RFC 7523 client assertions, the MCA `IMFCert` JWS and the `assertion_file` reader.
final class ClientAssertionTests: XCTestCase {
    private func decode(_ part: Substring) -> [String: Any] {
        var text = part.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while text.count % 4 != 0 { text += "=" }
        return (try? JSONSerialization.jsonObject(with: Data(base64Encoded: text) ?? Data())) as? [String: Any] ?? [:]
    }

    func testClaimsHeaderAndHS256Signature() throws {
        let assertion = ClientAssertion(clientId: "svc", audience: "https://idp/token", keyId: "k1", lifetime: .seconds(90))
        let jws = try assertion.signed(with: .hs256(secret: "s3cret"), now: 1_800_000_000.7, jti: "fixed-jti")
        let parts = jws.split(separator: ".", omittingEmptySubsequences: false)
        XCTAssertEqual(parts.count, 3)
        XCTAssertFalse(jws.contains("="), "unpadded base64url")
        XCTAssertEqual(decode(parts[0]) as NSDictionary, ["alg": "HS256", "typ": "JWT", "kid": "k1"])
        XCTAssertEqual(decode(parts[1]) as NSDictionary, [
            "iss": "svc", "sub": "svc", "aud": "https://idp/token", "iat": 1_800_000_000, "exp": 1_800_000_090, "jti": "fixed-jti",
        ])
        let input = Array("\(parts[0]).\(parts[1])".utf8)
        let expected = Digest.hmacSHA256(key: Array("s3cret".utf8), message: input)
        var text = parts[2].replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while text.count % 4 != 0 { text += "=" }
        XCTAssertEqual(Array(Data(base64Encoded: text) ?? Data()), expected)
        XCTAssertFalse(jws.contains("s3cret"))
    }

    /// A JWT bearer grant's assertion names its own subject; a Google one has none and carries
    /// the scope (or target audience) as a claim.
    func testGrantAssertionsNameTheirSubjectOrNoneAndCarryExtraClaims() throws {
        let bearer = ClientAssertion(issuer: "svc", subject: "user@example.com", audience: "https://idp/token", keyId: nil,
                                     lifetime: .seconds(60))
        let claims = decode(try bearer.signed(with: .hs256(secret: "k"), now: 1_800_000_000, jti: "j").split(separator: ".")[1])
        XCTAssertEqual(claims["iss"] as? String, "svc")
        XCTAssertEqual(claims["sub"] as? String, "user@example.com")
        let google = ClientAssertion(issuer: "sa@p.iam.gserviceaccount.com", subject: nil, audience: "https://oauth2.googleapis.com/token",
                                     keyId: "kid-1", lifetime: .seconds(300), extraClaims: ["scope": "https://www.googleapis.com/auth/cloud-platform"])
        let jws = try google.signed(with: .hs256(secret: "k"), now: 1_800_000_000, jti: "j")
        let googleClaims = decode(jws.split(separator: ".")[1])
        XCTAssertNil(googleClaims["sub"])
        XCTAssertEqual(googleClaims["scope"] as? String, "https://www.googleapis.com/auth/cloud-platform")
        XCTAssertEqual(googleClaims["exp"] as? Int, 1_800_000_300)
        XCTAssertEqual(decode(jws.split(separator: ".")[0])["kid"] as? String, "kid-1")
    }

    /// A Google key file: its fields, and a problem that names the field, never a value.
    func testAGoogleKeyFileIsReadAndItsProblemsNamed() throws {
        let pem = try Command.run(["openssl", "genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256"]).out
        let json = try JSONSerialization.data(withJSONObject: ["type": "service_account", "private_key": pem, "private_key_id": "kid-9",
                                                               "client_email": "sa@p.iam.gserviceaccount.com", "token_uri": "https://t/token"])
        let parsed = try GoogleServiceAccountKey(json: Array(json))
        XCTAssertEqual(parsed.clientEmail, "sa@p.iam.gserviceaccount.com")
        XCTAssertEqual(parsed.tokenURI, "https://t/token")
        XCTAssertEqual(parsed.keyId, "kid-9")
        for (broken, problem) in [(#"{"private_key": "SENTINEL"}"#, "no client_email"), ("SENTINEL", "not a JSON object"),
                                  (#"{"client_email": "a", "token_uri": "b"}"#, "no private_key")] {
            XCTAssertThrowsError(try GoogleServiceAccountKey(json: Array(broken.utf8))) { error in
                XCTAssertTrue("\(error)".contains(problem) && !"\(error)".contains("SENTINEL"), "\(error)")
            }
        }
    }

    func testJTIsAreUniqueAndCarry128Bits() {
        var seen = Set<String>()
        for _ in 0..<10_000 { seen.insert(ClientAssertion.newJTI()) }
        XCTAssertEqual(seen.count, 10_000)
        XCTAssertTrue(seen.allSatisfy { $0.count == 22 })
    }

    func testMCACertificateAssertionCarriesTheCertificateAndATimestamp() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("mca-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", directory.path + "/k.pem",
                             "-out", directory.path + "/c.pem", "-days", "1", "-subj", "/CN=mca-client"]
        process.standardError = FileHandle.nullDevice
        try process.run()
        process.waitUntilExit()
        let certificate = try X509Certificate(pem: Array(try Data(contentsOf: directory.appendingPathComponent("c.pem"))))
        let key = try SigningKey(pem: Array(try Data(contentsOf: directory.appendingPathComponent("k.pem"))))
        let jws = try MCACertificateAssertion.signed(certificate: certificate, key: key, now: 1_800_000_000.123)
        let parts = jws.split(separator: ".")
        let header = decode(parts[0])
        XCTAssertEqual(header["alg"] as? String, "RS256")
        XCTAssertEqual(header["x5c"] as? [String], [Data(certificate.der).base64EncodedString()])
        XCTAssertEqual(decode(parts[1]) as NSDictionary, ["timestamp": 1_800_000_000_123])
    }

    func testAssertionFileIsTrimmedAndRefusedWhenEmptyMalformedOrExpired() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("assertion-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("token").path
        let file = AssertionFile(path: path)
        func claims(_ object: [String: Any]) -> String {
            let data = try! JSONSerialization.data(withJSONObject: object)
            return data.base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
                .replacingOccurrences(of: "=", with: "")
        }
        let valid = "eyJhbGciOiJSUzI1NiJ9.\(claims(["exp": 2_000_000_000])).c2ln"
        let cases: [(String?, String)] = [
            (nil, "does not exist"), ("", "is empty"), (" \n", "is empty"), ("abc.def", "does not hold a JWT"),
            ("a..c", "does not hold a JWT"), ("eyJhbGciOiJSUzI1NiJ9.\(claims(["exp": 1_000])).c2ln", "expired"),
        ]
        for (contents, problem) in cases {
            try? FileManager.default.removeItem(atPath: path)
            if let contents { try contents.write(toFile: path, atomically: true, encoding: .utf8) }
            XCTAssertThrowsError(try file.current(now: 1_800_000_000)) { error in
                XCTAssertTrue("\(error)".contains("assertionFile \(path): \(problem)"), "\(error)")
            }
        }
        try (valid + "\n").write(toFile: path, atomically: true, encoding: .utf8)
        XCTAssertEqual(try file.current(now: 1_800_000_000), valid)
    }

    func testReloadingFileParsesAgainOnlyWhenTheBytesChange() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("reload-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("value").path
        let parses = Locked(0)
        let file = ReloadingFile(CredentialFile(key: "signingKeyFile", path: path)) { bytes throws(CryptoError) -> String in
            parses.update { $0 += 1 }
            guard bytes != Array("bad".utf8) else { throw CryptoError("not a key") }
            return String(decoding: bytes, as: UTF8.self)
        }
        try "one".write(toFile: path, atomically: true, encoding: .utf8)
        XCTAssertEqual(try file.current(), "one")
        XCTAssertEqual(try file.current(), "one")
        XCTAssertEqual(parses.value, 1)
        try "two".write(toFile: path, atomically: true, encoding: .utf8)
        XCTAssertEqual(try file.current(), "two")
        XCTAssertEqual(parses.value, 2)
        try "bad".write(toFile: path, atomically: true, encoding: .utf8)
        XCTAssertThrowsError(try file.current()) { error in
            XCTAssertEqual("\(error)", "cannot authenticate to the token endpoint: signingKeyFile \(path): not a key")
        }
    }
}
