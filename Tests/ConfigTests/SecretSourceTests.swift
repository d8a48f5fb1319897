import Config
import Foundation
import XCTest

final class SecretSourceTests: XCTestCase {
    func testDescriptionsNeverShowTheSecret() {
        XCTAssertEqual(SecretSource.inline("SENTINEL-TOKEN-123").description, "inline")
        XCTAssertEqual(SecretSource.file("/run/token").description, "file /run/token")
        XCTAssertEqual(SecretSource.env("TOKEN").description, "env TOKEN")
    }

    func testRead() throws {
        XCTAssertEqual(try SecretSource.inline("abc").read(environment: [:]), "abc")
        XCTAssertEqual(try SecretSource.env("T").read(environment: ["T": "v\n"]), "v")
        let dir = try makeTemporaryDirectory(self)
        let path = dir.appendingPathComponent("t").path
        try "  tok\r\n".write(toFile: path, atomically: true, encoding: .utf8)
        XCTAssertEqual(try SecretSource.file(path).read(environment: [:]), "tok")
    }

    func testReadErrors() throws {
        XCTAssertThrowsError(try SecretSource.env("T").read(environment: [:])) { error in
            XCTAssertEqual("\(error)", "<environment>: tokenEnv: environment variable T is not set")
        }
        XCTAssertThrowsError(try SecretSource.file("/nonexistent").read(environment: [:])) { error in
            XCTAssertEqual("\(error)", "/nonexistent: tokenFile: cannot read token file /nonexistent: no such file")
        }
        let dir = try makeTemporaryDirectory(self)
        let path = dir.appendingPathComponent("t").path
        try "SENTINEL-TOKEN-123\nsecond line\n".write(toFile: path, atomically: true, encoding: .utf8)
        XCTAssertThrowsError(try SecretSource.file(path).read(environment: [:])) { error in
            XCTAssertFalse("\(error)".contains("SENTINEL"))
            XCTAssertTrue("\(error)".contains("control characters"))
        }
    }
}
