import Foundation
import TokenManager
import XCTest

/// Which refresh token a replica holds and writes: the file's, a rotated one (written before
/// use, 0600, by rename), the fleet's newer one, and an operator's file over the fleet's.
final class RefreshTokenFileTests: XCTestCase {
    private var directory: URL!
    private var path: String { directory.appendingPathComponent("refresh").path }

    override func setUpWithError() throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("refresh-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    }

    override func tearDown() { try? FileManager.default.removeItem(at: directory) }

    private func contents() throws -> String {
        try String(contentsOfFile: path, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    private func modified() throws -> Double {
        (try FileManager.default.attributesOfItem(atPath: path)[.modificationDate] as? Date)?.timeIntervalSince1970 ?? 0
    }

    func testReadsTheFileAndRejectsWhatIsNoToken() throws {
        let file = RefreshTokenFile(path: path)
        XCTAssertThrowsError(try file.current()) { XCTAssertTrue("\($0)".contains("refreshTokenFile \(path): does not exist"), "\($0)") }
        try "  rt-1\n".write(toFile: path, atomically: true, encoding: .utf8)
        XCTAssertEqual(try file.current(), "rt-1")
        try "\n".write(toFile: path, atomically: true, encoding: .utf8)
        XCTAssertThrowsError(try RefreshTokenFile(path: path).current()) { XCTAssertTrue("\($0)".contains("is empty"), "\($0)") }
        try "a b".write(toFile: path, atomically: true, encoding: .utf8)
        XCTAssertThrowsError(try RefreshTokenFile(path: path).current()) {
            XCTAssertTrue("\($0)".contains("spaces or control characters") && !"\($0)".contains("a b"), "\($0)")
        }
    }

    func testARotationIsWrittenWithMode0600AndUsedNext() throws {
        try "rt-1\n".write(toFile: path, atomically: true, encoding: .utf8)
        let file = RefreshTokenFile(path: path)
        XCTAssertEqual(try file.current(), "rt-1")
        XCTAssertTrue(file.rotate(to: "rt-2", issuedAtWall: Date().timeIntervalSince1970))
        XCTAssertEqual(try contents(), "rt-2")
        XCTAssertEqual((try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? NSNumber)?.intValue, 0o600)
        XCTAssertEqual(try file.current(), "rt-2")
        XCTAssertFalse(file.changedOnDisk(), "its own write is no change")
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: directory.path), ["refresh"], "no temporary file left")
    }

    func testAnUnwritableFileKeepsTheRotatedTokenInMemory() throws {
        let file = RefreshTokenFile(path: directory.appendingPathComponent("missing-dir/refresh").path)
        XCTAssertFalse(file.rotate(to: "rt-2", issuedAtWall: 1))
        XCTAssertEqual(file.held, "rt-2")
    }

    func testTheFleetsNewerTokenIsAdoptedAndAnOlderOneIgnored() throws {
        try "rt-old\n".write(toFile: path, atomically: true, encoding: .utf8)
        let file = RefreshTokenFile(path: path)
        XCTAssertEqual(try file.current(), "rt-old")
        let fileTime = try modified()
        XCTAssertEqual(file.adopt("rt-older", issuedAtWall: fileTime - 60), .kept, "an entry older than the file")
        XCTAssertEqual(try contents(), "rt-old")
        XCTAssertEqual(file.adopt("rt-new", issuedAtWall: fileTime + 1), .taken, "a restarted replica takes the fleet's newer token")
        XCTAssertEqual(try contents(), "rt-new")
        XCTAssertEqual(try file.current(), "rt-new")
        XCTAssertEqual(file.adopt("rt-new", issuedAtWall: fileTime + 2), .kept, "the same token again")
        XCTAssertEqual(file.adopt("rt-between", issuedAtWall: fileTime + 0.5), .kept, "older than the one held")
        XCTAssertEqual(try modified(), fileTime + 1, accuracy: 0.01, "the file's time is the adopted token's issue time")
        // After a restart the file alone says how new its token is.
        XCTAssertEqual(RefreshTokenFile(path: path).adopt("rt-between", issuedAtWall: fileTime + 0.5), .kept)
    }

    func testAnOperatorsReplacedFileWinsOverTheFleetsSpentToken() throws {
        try "rt-1\n".write(toFile: path, atomically: true, encoding: .utf8)
        let file = RefreshTokenFile(path: path)
        XCTAssertEqual(try file.current(), "rt-1")
        let entryIssued = Date().timeIntervalSince1970 - 5
        Thread.sleep(forTimeInterval: 0.01)
        try "rt-consented-again\n".write(toFile: path, atomically: true, encoding: .utf8)
        XCTAssertTrue(file.changedOnDisk())
        XCTAssertEqual(file.adopt("rt-spent", issuedAtWall: entryIssued), .kept)
        XCTAssertEqual(try contents(), "rt-consented-again")
        XCTAssertEqual(try file.current(), "rt-consented-again")
        XCTAssertFalse(file.changedOnDisk())
    }
}
