import Config
import Foundation
import XCTest

/// Parses `yaml` (as file "c.yaml") expecting failure; returns the problem lines.
func problemLines(
    _ yaml: String, environment: [String: String] = [:],
    file: StaticString = #filePath, line: UInt = #line
) -> [String] {
    do {
        let config = try ConfigLoader.parse(yaml: yaml, file: "c.yaml", environment: environment)
        XCTFail("expected problems, got \(config)", file: file, line: line)
        return []
    } catch {
        XCTAssertEqual(error.description, error.problems.map(\.description).joined(separator: "\n"), file: file, line: line)
        return error.problems.map(\.description)
    }
}

/// Parses `yaml` expecting success.
func parseOK(
    _ yaml: String, environment: [String: String] = [:],
    file: StaticString = #filePath, line: UInt = #line
) -> SidecarConfig? {
    do {
        return try ConfigLoader.parse(yaml: yaml, file: "c.yaml", environment: environment)
    } catch {
        XCTFail("unexpected problems:\n\(error)", file: file, line: line)
        return nil
    }
}

/// A fresh temporary directory, removed when the test case finishes.
func makeTemporaryDirectory(_ testCase: XCTestCase) throws -> URL {
    let url = FileManager.default.temporaryDirectory
        .appendingPathComponent("config-tests-\(UUID().uuidString)", isDirectory: true)
    try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    testCase.addTeardownBlock { try? FileManager.default.removeItem(at: url) }
    return url
}

/// `host:port` → pattern, failing the test when it does not parse.
func pattern(_ text: String, file: StaticString = #filePath, line: UInt = #line) -> HostPattern {
    switch HostPattern.parse(text) {
    case .success(let pattern): return pattern
    case .failure(let error):
        XCTFail("\(text): \(error)", file: file, line: line)
        return HostPattern(kind: .exact("invalid"))
    }
}
