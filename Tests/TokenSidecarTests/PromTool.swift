import Foundation
import XCTest

/// `promtool check metrics` (Debian `prometheus`) on a scrape: the strict exposition-format check
/// Prometheus itself applies. Required in CI (`CI` set); skipped elsewhere when not installed.
enum PromTool {
    static func check(_ scrape: String, file: StaticString = #filePath, line: UInt = #line) throws {
        guard let promtool = ["/usr/bin/promtool", "/usr/local/bin/promtool"].first(where: FileManager.default.isExecutableFile) else {
            if ProcessInfo.processInfo.environment["CI"] != nil { XCTFail("promtool is not installed", file: file, line: line) }
            return
        }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: promtool)
        process.arguments = ["check", "metrics"]
        let input = Pipe(), output = Pipe()
        process.standardInput = input
        process.standardOutput = output
        process.standardError = output
        try process.run()
        input.fileHandleForWriting.write(Data(scrape.utf8))
        try input.fileHandleForWriting.close()
        let report = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        XCTAssertEqual(process.terminationStatus, 0, "promtool check metrics: \(report)", file: file, line: line)
    }
}
