import TokenManager
import XCTest

final class StaticCredentialTests: XCTestCase {
    func testStaticCredentialAlwaysYieldsItsToken() throws {
        let credential = StaticCredential(name: "api", token: "abc")
        let token = try XCTUnwrap(credential.currentToken())
        XCTAssertEqual(token.value, "abc")
        XCTAssertEqual(String(decoding: token.headerLine, as: UTF8.self), "Authorization: Bearer abc\r\n")
        XCTAssertNil(token.expiresAt)
        XCTAssertTrue(token.isUsable(at: .now))
    }

    func testFingerprintIsFirstEightHexOfSHA256AndDescriptionHidesTheToken() {
        // sha256("abc") = ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad
        let token = AccessToken(value: "abc")
        XCTAssertEqual(token.fingerprint, "ba7816bf")
        XCTAssertEqual("\(token)", "token(sha256:ba7816bf)")
        XCTAssertFalse("\(token)".contains("abc"))
    }

    func testExpiredTokenIsNotUsable() {
        let now = ContinuousClock.now
        let token = AccessToken(value: "t", expiresAt: now + .seconds(1))
        XCTAssertTrue(token.isUsable(at: now))
        XCTAssertFalse(token.isUsable(at: now + .seconds(2)))
    }

    func testCredentialSetLooksUpByName() {
        let set = CredentialSet([StaticCredential(name: "b", token: "1"), StaticCredential(name: "a", token: "2")])
        XCTAssertEqual(set["a"]?.currentToken()?.value, "2")
        XCTAssertNil(set["c"])
        XCTAssertEqual(set.all.map(\.name), ["a", "b"])
    }
}
