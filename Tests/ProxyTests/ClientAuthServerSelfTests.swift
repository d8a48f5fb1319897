import Foundation
import XCTest

/// The verifying authorization server must refuse what a real one refuses, or every client-auth
/// test could pass for the wrong reason: its own self-test (87 cases, bad signatures, claims,
/// replays, certificates) runs here so CI runs it.
final class ClientAuthServerSelfTests: XCTestCase {
    func testTheVerifyingServerAcceptsGoodAndRefusesBadClientAuthentication() throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", Backend.fixtures.appendingPathComponent("client_auth_server_selftest.py").path]
        let output = Pipe()
        process.standardOutput = output
        process.standardError = output
        try process.run()
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        XCTAssertEqual(process.terminationStatus, 0, text)
        XCTAssertTrue(text.contains("OK: "), text)
    }
}
