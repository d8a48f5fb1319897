import Crypto
import EventLoop
import Foundation
import TestSupport
import TokenManager
import XCTest

/// DPoP proofs (RFC 9449 §4.2) as a resource server checks them, with tools independent of the
/// code under test: OpenSSL verifies the signature, Python recomputes the RFC 7638 thumbprint.
final class DPoPKeyTests: XCTestCase {
    private func part(_ jws: String, _ index: Int) throws -> [String: Any] {
        let parts = jws.split(separator: ".", omittingEmptySubsequences: false)
        XCTAssertEqual(parts.count, 3)
        return try XCTUnwrap(try JSONSerialization.jsonObject(with: try bytes(parts[index])) as? [String: Any])
    }

    private func bytes(_ part: Substring) throws -> Data {
        var text = part.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while text.count % 4 != 0 { text += "=" }
        return try XCTUnwrap(Data(base64Encoded: text))
    }

    /// DER `SEQUENCE { INTEGER r, INTEGER s }` from the JWS's raw 64-byte `r‖s`.
    private func der(_ raw: Data) -> Data {
        func integer(_ bytes: Data) -> [UInt8] {
            var value = Array(bytes.drop { $0 == 0 })
            if value.isEmpty || value[0] & 0x80 != 0 { value.insert(0, at: 0) }
            return [0x02, UInt8(value.count)] + value
        }
        let body = integer(raw.prefix(32)) + integer(raw.suffix(32))
        return Data([0x30, UInt8(body.count)] + body)
    }

    func testAProofVerifiesAndCarriesEveryClaimAResourceServerChecks() throws {
        let key = try SigningKey.generateP256()
        let dpop = try DPoPKey(key: key)
        let proof = try dpop.proof(method: "POST", uri: "https://api.test/orders", accessToken: "tok-123", nonce: "n-1",
                                   now: 1_800_000_000.7)
        let header = try part(proof, 0)
        XCTAssertEqual(header["typ"] as? String, "dpop+jwt")
        XCTAssertEqual(header["alg"] as? String, "ES256")
        let jwk = try XCTUnwrap(header["jwk"] as? [String: String])
        XCTAssertEqual(Set(jwk.keys), ["crv", "kty", "x", "y"], "the public key only")
        let claims = try part(proof, 1)
        XCTAssertEqual(claims["htm"] as? String, "POST")
        XCTAssertEqual(claims["htu"] as? String, "https://api.test/orders")
        XCTAssertEqual(claims["iat"] as? Int, 1_800_000_000)
        XCTAssertEqual(claims["nonce"] as? String, "n-1")
        XCTAssertEqual((claims["jti"] as? String)?.count, 22, "128 random bits")

        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("dpop-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let parts = proof.split(separator: ".")
        try key.publicKeyPEM().write(to: directory.appendingPathComponent("pub.pem"), atomically: true, encoding: .utf8)
        try Data((parts[0] + "." + parts[1]).utf8).write(to: directory.appendingPathComponent("input"))
        try der(try bytes(parts[2])).write(to: directory.appendingPathComponent("sig.der"))
        let verified = try Command.run(["openssl", "dgst", "-sha256", "-verify", directory.appendingPathComponent("pub.pem").path,
                                        "-signature", directory.appendingPathComponent("sig.der").path,
                                        directory.appendingPathComponent("input").path])
        XCTAssertTrue(verified.out.contains("Verified OK"), verified.out + verified.err)

        // ath and the thumbprint, recomputed by Python from what the proof carries.
        let script = """
            import base64, hashlib, json, sys
            b = lambda d: base64.urlsafe_b64encode(d).rstrip(b"=").decode()
            jwk = json.loads(sys.argv[1])
            canonical = json.dumps({k: jwk[k] for k in ("crv", "kty", "x", "y")}, separators=(",", ":"), sort_keys=True)
            print(b(hashlib.sha256(canonical.encode()).digest()), b(hashlib.sha256(b"tok-123").digest()))
            """
        let jwkText = String(decoding: try JSONSerialization.data(withJSONObject: jwk), as: UTF8.self)
        let python = try Command.run(["python3", "-c", script, jwkText])
        let expected = python.out.split(separator: " ").map { $0.trimmingCharacters(in: .whitespacesAndNewlines) }
        XCTAssertEqual(expected.first, dpop.thumbprint, "RFC 7638 thumbprint")
        XCTAssertEqual(expected.last, claims["ath"] as? String, "ath = base64url(SHA-256(token))")
    }

    func testEveryProofIsFreshAndATokenRequestProofHasNoAth() throws {
        let dpop = try DPoPKey.generated()
        let first = try dpop.proof(method: "POST", uri: "https://as.test/token", now: 1_800_000_000)
        let second = try dpop.proof(method: "POST", uri: "https://as.test/token", now: 1_800_000_000)
        XCTAssertNotEqual(try part(first, 1)["jti"] as? String, try part(second, 1)["jti"] as? String, "a unique jti per proof")
        XCTAssertNil(try part(first, 1)["ath"], "no access token yet")
        XCTAssertNil(try part(first, 1)["nonce"])
        XCTAssertNotEqual(dpop.thumbprint, try DPoPKey.generated().thumbprint, "a new key per generation")
        XCTAssertEqual(dpop.thumbprint.count, 43)
    }
}

extension DPoPKeyTests {
    func testATokenIsPresentedWithItsScheme() throws {
        XCTAssertEqual(String(decoding: AccessToken(value: "t").headerLine, as: UTF8.self), "Authorization: Bearer t\r\n")
        let bound = AccessToken(value: "t", binding: TokenBinding(dpopKey: try DPoPKey.generated(), nonces: DPoPNonces()))
        XCTAssertEqual(String(decoding: bound.headerLine, as: UTF8.self), "Authorization: DPoP t\r\n")
        XCTAssertEqual(bound.scheme, "DPoP")
        XCTAssertEqual(AccessToken(value: "t").scheme, "Bearer")
    }
}
