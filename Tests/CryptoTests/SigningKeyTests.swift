import Crypto
import Foundation
import XCTest

/// Keys and certificates made with the `openssl` CLI; signatures checked with `openssl` too (an
/// independent verifier: for ES256 the raw r||s is re-encoded as DER by hand here).
final class SigningKeyTests: XCTestCase {
    private var directory: URL!

    override func setUpWithError() throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("signing-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    }

    override func tearDown() { try? FileManager.default.removeItem(at: directory) }

    private func path(_ name: String) -> String { directory.appendingPathComponent(name).path }
    private func bytes(_ name: String) throws -> [UInt8] { Array(try Data(contentsOf: URL(fileURLWithPath: path(name)))) }

    @discardableResult
    private func openssl(_ arguments: [String]) throws -> Int32 {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["openssl"] + arguments
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        process.waitUntilExit()
        return process.terminationStatus
    }

    private func verify(signature: [UInt8], of message: [UInt8], publicKey: String) throws -> Bool {
        try Data(message).write(to: URL(fileURLWithPath: path("message")))
        try Data(signature).write(to: URL(fileURLWithPath: path("signature")))
        return try openssl(["dgst", "-sha256", "-verify", publicKey, "-signature", path("signature"), path("message")]) == 0
    }

    /// DER `ECDSA-Sig-Value` from a raw 64-byte r||s (test-side, independent of the code under test).
    private func der(raw: [UInt8]) -> [UInt8] {
        func integer(_ bytes: ArraySlice<UInt8>) -> [UInt8] {
            var value = Array(bytes.drop { $0 == 0 })
            if value.isEmpty { value = [0] }
            if value[0] & 0x80 != 0 { value.insert(0, at: 0) }
            return [0x02, UInt8(value.count)] + value
        }
        let body = integer(raw[0..<32]) + integer(raw[32..<64])
        return [0x30, UInt8(body.count)] + body
    }

    func testRS256SignaturesVerifyWithOpenSSL() throws {
        try openssl(["genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048", "-out", path("rsa.key")])
        try openssl(["pkey", "-in", path("rsa.key"), "-pubout", "-out", path("rsa.pub")])
        let key = try SigningKey(pem: try bytes("rsa.key"))
        XCTAssertEqual(key.algorithm, .rs256)
        let message = Array("header.payload".utf8)
        let signature = try key.sign(message)
        XCTAssertEqual(signature.count, 256)
        XCTAssertTrue(try verify(signature: signature, of: message, publicKey: path("rsa.pub")))
        XCTAssertFalse(try verify(signature: signature, of: Array("header.other".utf8), publicKey: path("rsa.pub")))
    }

    func testES256SignaturesAreRawRSAndVerifyWithOpenSSL() throws {
        try openssl(["genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out", path("ec.key")])
        try openssl(["pkey", "-in", path("ec.key"), "-traditional", "-out", path("ec-traditional.key")])
        try openssl(["pkey", "-in", path("ec.key"), "-pubout", "-out", path("ec.pub")])
        for file in ["ec.key", "ec-traditional.key"] {
            let key = try SigningKey(pem: try bytes(file))
            XCTAssertEqual(key.algorithm, .es256)
            // Many signatures: r or s with a leading zero byte must still be 32 bytes each.
            for round in 0..<40 {
                let message = Array("message \(round)".utf8)
                let signature = try key.sign(message)
                XCTAssertEqual(signature.count, 64, "raw r||s (RFC 7518 §3.4), not DER")
                XCTAssertTrue(try verify(signature: der(raw: signature), of: message, publicKey: path("ec.pub")))
            }
        }
    }

    func testUnusableKeysAreRefusedWithTheReason() throws {
        try openssl(["genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:1024", "-out", path("small.key")])
        try openssl(["genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-384", "-out", path("p384.key")])
        try openssl(["genpkey", "-algorithm", "ED25519", "-out", path("ed.key")])
        try openssl(["genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-aes256", "-pass", "pass:pw",
                     "-out", path("encrypted.key")])
        let cases: [(String, String)] = [
            ("small.key", "at least 2048"), ("p384.key", "P-256"), ("ed.key", "neither RSA nor EC"),
            ("encrypted.key", "unencrypted"),
        ]
        for (file, reason) in cases {
            XCTAssertThrowsError(try SigningKey(pem: try bytes(file)), file) { error in
                XCTAssertTrue("\(error)".contains(reason), "\(file): \(error)")
                XCTAssertFalse("\(error)".contains("BEGIN"), "never the key material")
            }
        }
        XCTAssertThrowsError(try SigningKey(pem: Array("not a key".utf8)))
        XCTAssertThrowsError(try SigningKey(pem: []))
    }

    func testCertificateDERCommonNameAndKeyMatch() throws {
        try openssl(["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", path("cert.key"), "-out", path("cert.pem"),
                     "-days", "1", "-subj", "/O=Example/CN=mca-client"])
        try openssl(["x509", "-in", path("cert.pem"), "-outform", "DER", "-out", path("cert.der")])
        try openssl(["genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048", "-out", path("other.key")])
        let certificate = try X509Certificate(pem: try bytes("cert.pem"))
        XCTAssertEqual(certificate.der, try bytes("cert.der"))
        XCTAssertEqual(certificate.commonName, "mca-client")
        XCTAssertTrue(try SigningKey(pem: try bytes("cert.key")).matches(certificate))
        XCTAssertFalse(try SigningKey(pem: try bytes("other.key")).matches(certificate))
        XCTAssertThrowsError(try X509Certificate(pem: try bytes("cert.key")))
    }

    func testHMACSHA256MatchesRFC4231() {
        // RFC 4231 test case 2.
        let mac = Digest.hmacSHA256(key: Array("Jefe".utf8), message: Array("what do ya want for nothing?".utf8))
        XCTAssertEqual(Digest.hex(mac), "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843")
    }
}
