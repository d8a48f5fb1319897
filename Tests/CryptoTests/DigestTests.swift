import Crypto
import XCTest

/// The digests tokens, certificates and fingerprints are named by.
final class DigestTests: XCTestCase {
    func testSHA256() {
        XCTAssertEqual(Digest.sha256Hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        XCTAssertEqual(Digest.sha256Hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
        // Longer than a block: 1,000 bytes.
        XCTAssertEqual(Digest.sha256Hex(String(repeating: "a", count: 1000)),
                       "41edece42d63e8d9bf515a9ba6932e1c20cbc9f5a5d134645adb5db1b9737ea3")
    }

    /// RFC 4231's HMAC-SHA-256 cases 1, 2 and 6: a short key, a key shorter than the message, a
    /// key longer than a block (hashed first); and a block-sized key, used as it is.
    func testHMACSHA256AgainstRFC4231() {
        let cases: [(key: [UInt8], message: [UInt8], mac: String)] = [
            ([UInt8](repeating: 0x0b, count: 20), Array("Hi There".utf8),
             "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7"),
            (Array("Jefe".utf8), Array("what do ya want for nothing?".utf8),
             "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"),
            ([UInt8](repeating: 0xaa, count: 131), Array("Test Using Larger Than Block-Size Key - Hash Key First".utf8),
             "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54"),
        ]
        for (index, test) in cases.enumerated() {
            XCTAssertEqual(Digest.hex(Digest.hmacSHA256(key: test.key, message: test.message)), test.mac, "case \(index + 1)")
        }
        // A 64-byte key is used as it is, not hashed (the value from Python's hmac module).
        XCTAssertEqual(Digest.hex(Digest.hmacSHA256(key: [UInt8](repeating: 0xaa, count: 64), message: [1])),
                       "f144140abd05e9641212e3054b2dea55adc6dff675ae4f35cb159b9969960b58")
        XCTAssertEqual(Digest.hex([]), "")
    }
}
