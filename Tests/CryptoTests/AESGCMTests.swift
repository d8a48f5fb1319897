import Crypto
import XCTest

/// AES-256-GCM through OpenSSL: a known-answer vector, round trips and every kind of tampering.
final class AESGCMTests: XCTestCase {
    private let key = [UInt8](repeating: 0x42, count: 32)
    private let nonce = [UInt8](repeating: 7, count: 12)

    /// NIST GCM test vector (McGrew & Viega, test case 13: zero key, zero nonce, empty input).
    func testKnownAnswer() throws {
        let sealed = try XCTUnwrap(AESGCM.seal([], key: [UInt8](repeating: 0, count: 32),
                                               nonce: [UInt8](repeating: 0, count: 12), additionalData: []))
        XCTAssertEqual(Digest.hex(sealed), "530f8afbc74536b9a963b4f1c4cb738b")
        // Test case 14: one zero block.
        let block = try XCTUnwrap(AESGCM.seal([UInt8](repeating: 0, count: 16), key: [UInt8](repeating: 0, count: 32),
                                              nonce: [UInt8](repeating: 0, count: 12), additionalData: []))
        XCTAssertEqual(Digest.hex(block), "cea7403d4d606b6e074ec5d3baf39d18" + "d0d1c8a799996bf0265b98b5d48ab919")
    }

    func testRoundTripWithAdditionalData() throws {
        let plaintext = Array("a token value".utf8)
        let sealed = try XCTUnwrap(AESGCM.seal(plaintext, key: key, nonce: nonce, additionalData: Array("key-a".utf8)))
        XCTAssertEqual(sealed.count, plaintext.count + 16)
        XCTAssertEqual(AESGCM.open(sealed, key: key, nonce: nonce, additionalData: Array("key-a".utf8)), plaintext)
        XCTAssertNil(AESGCM.open(sealed, key: key, nonce: nonce, additionalData: Array("key-b".utf8)), "another cache key")
        var wrongKey = key
        wrongKey[0] ^= 1
        XCTAssertNil(AESGCM.open(sealed, key: wrongKey, nonce: nonce, additionalData: Array("key-a".utf8)))
        var wrongNonce = nonce
        wrongNonce[11] ^= 1
        XCTAssertNil(AESGCM.open(sealed, key: key, nonce: wrongNonce, additionalData: Array("key-a".utf8)))
        for index in sealed.indices {
            var tampered = sealed
            tampered[index] ^= 0x80
            XCTAssertNil(AESGCM.open(tampered, key: key, nonce: nonce, additionalData: Array("key-a".utf8)), "byte \(index)")
        }
        XCTAssertNil(AESGCM.open(Array(sealed.dropLast()), key: key, nonce: nonce, additionalData: Array("key-a".utf8)))
        XCTAssertNil(AESGCM.open([1, 2, 3], key: key, nonce: nonce, additionalData: []))
        XCTAssertNil(AESGCM.seal(plaintext, key: [1], nonce: nonce, additionalData: []))
    }

    func testRandomBytes() throws {
        let first = try XCTUnwrap(AESGCM.randomBytes(12))
        let second = try XCTUnwrap(AESGCM.randomBytes(12))
        XCTAssertEqual(first.count, 12)
        XCTAssertNotEqual(first, second)
    }
}
