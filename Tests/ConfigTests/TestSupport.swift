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

/// Writes `contents` to `name` in a fresh temporary directory; returns the path.
func writeTemporaryFile(_ testCase: XCTestCase, _ name: String, _ contents: String) throws -> String {
    let path = try makeTemporaryDirectory(testCase).appendingPathComponent(name).path
    try contents.write(toFile: path, atomically: true, encoding: .utf8)
    return path
}

/// Marker-only PEM texts: the loader checks the markers, not the DER inside.
enum FakePEM {
    static let certificate = "-----BEGIN CERTIFICATE-----\nMIIBfake\n-----END CERTIFICATE-----\n"
    static let key = "-----BEGIN PRIVATE KEY-----\nSENTINEL-KEY-123\n-----END PRIVATE KEY-----\n"
    static let encryptedKey = "-----BEGIN ENCRYPTED PRIVATE KEY-----\nSENTINEL-KEY-123\n-----END ENCRYPTED PRIVATE KEY-----\n"
}

/// `VCAP_SERVICES` JSON with one AdvancedMobileAccess instance whose credentials are `credentials`.
func vcapServices(_ credentials: [String: String], service: String = "AdvancedMobileAccess") -> String {
    let object: [String: Any] = [service: [["name": "mca-instance", "label": service, "credentials": credentials]]]
    let data = try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])
    return String(decoding: data ?? Data(), as: UTF8.self)
}

/// `VCAP_APPLICATION` JSON with this application_id.
func vcapApplication(_ applicationId: String) -> String {
    "{\"application_id\": \"\(applicationId)\", \"application_name\": \"app\"}"
}

/// The origin of a value discovered from the binding ``vcapServices(_:service:)`` writes.
let vcapOrigin = ValueOrigin.vcapServices(VCAPBinding(variable: "VCAP_SERVICES", label: "AdvancedMobileAccess", name: "mca-instance"))
