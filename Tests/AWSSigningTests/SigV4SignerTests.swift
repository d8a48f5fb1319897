import AWSSigning
import XCTest

/// The signer's clock format.
final class SigV4SignerTests: XCTestCase {
    func testTheTimestampIsUTCAndPadded() {
        XCTAssertEqual(SigV4Signer.timestamp(epochSeconds: 0), "19700101T000000Z")
        XCTAssertEqual(SigV4Signer.timestamp(epochSeconds: 1_796_300_405), "20261203T122005Z")
        XCTAssertEqual(SigV4Signer.timestamp(epochSeconds: 1_440_938_160), "20150830T123600Z", "the test suite's date")
    }
}
