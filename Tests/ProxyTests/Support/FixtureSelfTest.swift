import Foundation
import XCTest

/// Runs a fixture's own self-test script (Fixtures/NAME) and fails the calling test unless it
/// exits 0 and reports `OK: …`: a verifying fixture that stopped refusing what a real server
/// refuses would let every test that uses it pass for the wrong reason.
func assertFixtureSelfTestPasses(_ script: String, file: StaticString = #filePath, line: UInt = #line) throws {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
    process.arguments = ["python3", Backend.fixtures.appendingPathComponent(script).path]
    let output = Pipe()
    process.standardOutput = output
    process.standardError = output
    try process.run()
    let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
    process.waitUntilExit()
    XCTAssertEqual(process.terminationStatus, 0, text, file: file, line: line)
    XCTAssertTrue(text.contains("OK: "), text, file: file, line: line)
}
