import Crypto
import XCTest

/// The digests tokens, certificates and fingerprints are named by.
final class DigestTests: XCTestCase {
    func testSHA256() {
        XCTAssertEqual(Digest.sha256Hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
    }
}
