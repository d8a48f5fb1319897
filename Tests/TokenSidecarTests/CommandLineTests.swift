import Foundation
import XCTest

/// The executable as a user runs it.
final class CommandLineTests: XCTestCase {
    static var binary: URL { sidecarBinary }

    func run(_ arguments: [String], environment: [String: String] = [:]) throws -> Outcome {
        try runSidecar(arguments, environment: environment)
    }

    func write(_ text: String) throws -> String { try writeConfig(text) }

    func testBadConfigNamesFileAndKeyPathAndExits2() throws {
        let path = try write("""
        listen: "127.0.0.1:8080"
        credentials:
          api:
            type: static
            token: "SENTINEL-SECRET-1"
        routes:
          - host: "api.test"
            upstrem: "http://127.0.0.1:1"
            credential: nope
        """)
        let outcome = try run(["check", "--config", path])
        XCTAssertEqual(outcome.status, 2)
        XCTAssertTrue(outcome.err.contains("\(path): routes[0].upstrem"), outcome.err)
        XCTAssertTrue(outcome.err.contains("\(path): routes[0].credential"), outcome.err)
        XCTAssertFalse(outcome.err.contains("SENTINEL-SECRET-1"))
        let running = try run(["run", "--config", path])
        XCTAssertEqual(running.status, 2, "run refuses a bad config the same way")
    }

    /// `check` writes nothing: a `placeholderFile` that does not exist yet is only checked for
    /// where it would go; a bad placement names its key and exits 2.
    func testCheckNeitherWritesAPlaceholderNorAcceptsABadPlacement() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("check-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let placeholder = directory.appendingPathComponent("api.placeholder").path
        let good = try write("""
        credentials:
          api: {type: static, token: "SENTINEL-KEY", placeholderFile: "\(placeholder)"}
        routes:
          - {host: api.test, credential: api, inject: {header: x-api-key}}
        """)
        let checked = try run(["check", "--config", good])
        XCTAssertEqual(checked.status, 0, checked.err)
        XCTAssertTrue(checked.out.contains("inject: {header: \"x-api-key\", format: \"{token}\"}"), checked.out)
        XCTAssertFalse(FileManager.default.fileExists(atPath: placeholder), "check wrote the placeholder file")
        XCTAssertFalse(checked.out.contains("SENTINEL-KEY"))
        let nowhere = try write("""
        credentials:
          api: {type: static, token: t, placeholderFile: "\(directory.path)/missing/api.placeholder"}
        """)
        let unwritable = try run(["check", "--config", nowhere])
        XCTAssertEqual(unwritable.status, 2)
        XCTAssertTrue(unwritable.err.contains("placeholderFile \(directory.path)/missing/api.placeholder: cannot be written"), unwritable.err)
        let bad = try write("""
        credentials:
          api: {type: static, token: t}
        routes:
          - {host: api.test, credential: api, inject: {header: x-api-key, format: "Bearer"}}
        """)
        let refused = try run(["check", "--config", bad])
        XCTAssertEqual(refused.status, 2)
        XCTAssertTrue(refused.err.contains("\(bad): routes[0].inject.format: must contain {token} exactly once"), refused.err)
        // A grant that does not exist, and a refresh-token grant without its file.
        let grants = try write("""
        credentials:
          a: {type: oauth2, grant: password, tokenUrl: "https://idp.test/token", clientId: c, secret: s}
          b: {type: oauth2, grant: refresh_token, tokenUrl: "https://idp.test/token", clientId: c, secret: s}
        """)
        let refusedGrants = try run(["check", "--config", grants])
        XCTAssertEqual(refusedGrants.status, 2)
        XCTAssertTrue(refusedGrants.err.contains("\(grants): credentials.a.grant: 'password' is not one of"), refusedGrants.err)
        XCTAssertTrue(refusedGrants.err.contains("\(grants): credentials.b"), refusedGrants.err)
        XCTAssertTrue(refusedGrants.err.contains("refreshTokenFile"), refusedGrants.err)
    }

    func testBadMaxClientConnectionsExits2() throws {
        let path = try write("maxClientConnections: 0\n")
        let outcome = try run(["check", "--config", path])
        XCTAssertEqual(outcome.status, 2)
        XCTAssertTrue(outcome.err.contains("\(path): maxClientConnections: must be between 1 and 1000000 (got 0)"), outcome.err)
        let overridden = try run(["check", "--config", path], environment: ["TOKEN_SIDECAR_MAX_CLIENT_CONNECTIONS": "50"])
        XCTAssertEqual(overridden.status, 0, overridden.err)
        XCTAssertTrue(overridden.out.contains("\nmaxClientConnections: 50\n"), overridden.out)
    }

    /// A spool directory where no file can be created: `check` and `run` both exit 2 naming
    /// the key; with spooling off it is not used.
    func testUnusableSpoolDirectoryExits2() throws {
        let path = try write("spool: {directory: /nonexistent/spool}\n")
        for command in ["check", "run"] {
            let outcome = try run([command, "--config", path])
            XCTAssertEqual(outcome.status, 2, command)
            XCTAssertTrue(outcome.err.contains("\(path): spool.directory: cannot create a file in /nonexistent/spool: No such file or directory"),
                          "\(command): \(outcome.err)")
        }
        let off = try run(["check", "--config", path], environment: ["TOKEN_SIDECAR_SPOOL_MAX_BYTES": "0"])
        XCTAssertEqual(off.status, 0, off.err)
        XCTAssertTrue(off.out.contains("\nspool:\n  directory: \"/nonexistent/spool\"\n  maxBytes: 0\n"), off.out)
    }

    func testMissingConfigFileExits2() throws {
        let outcome = try run(["check", "--config", "/nonexistent/token-sidecar.yaml"])
        XCTAssertEqual(outcome.status, 2)
        XCTAssertTrue(outcome.err.contains("/nonexistent/token-sidecar.yaml"))
    }

    func testCheckPrintsEffectiveConfigWithSecretsMasked() throws {
        let path = try write("""
        credentials:
          api:
            type: static
            token: "SENTINEL-SECRET-2"
        routes:
          - host: "api.test"
            credential: api
        """)
        let outcome = try run(["check", "--config", path])
        XCTAssertEqual(outcome.status, 0, outcome.err)
        XCTAssertTrue(outcome.out.contains("listen: "), outcome.out)
        XCTAssertTrue(outcome.out.contains("api.test"))
        XCTAssertFalse(outcome.out.contains("SENTINEL-SECRET-2"))
        XCTAssertFalse(outcome.err.contains("SENTINEL-SECRET-2"))
    }

    func testHelpTeachesUsage() throws {
        let outcome = try run(["--help"])
        XCTAssertEqual(outcome.status, 0)
        XCTAssertTrue(outcome.out.contains("HTTP_PROXY"))
        XCTAssertTrue(outcome.out.contains("run"))
        XCTAssertTrue(outcome.out.contains("check"))
    }

    func testHelpParagraphsWrapAtAnyWidthAndExamplesStayVerbatim() throws {
        for command in [[], ["run"], ["token"], ["demo"]] {
            let wide = try run(command + ["--help"], environment: ["COLUMNS": "250"])
            XCTAssertEqual(wide.status, 0)
            let narrow = try run(command + ["--help"], environment: ["COLUMNS": "60"])
            XCTAssertEqual(narrow.status, 0)
            // The same words, re-flowed: no line ends where the source text happened to break.
            XCTAssertEqual(wide.out.split(whereSeparator: \.isWhitespace), narrow.out.split(whereSeparator: \.isWhitespace), "\(command)")
            XCTAssertLessThan(wide.out.split(separator: "\n").count, narrow.out.split(separator: "\n").count, "\(command)")
            for line in narrow.out.split(separator: "\n") where !line.contains("token-sidecar ") && !line.contains("curl ") {
                XCTAssertLessThanOrEqual(line.count, 60, "\(command): \(line)")
            }
        }
        let wide = try run(["--help"], environment: ["COLUMNS": "250"]).out
        XCTAssertTrue(wide.contains("and send plain http:// requests"), "a paragraph is one line when the terminal allows: \(wide)")
        XCTAssertTrue(wide.contains("\n  token-sidecar run --config config/token-sidecar.yaml\n"), "examples keep their own lines: \(wide)")
    }

    func testRunServesLogsItsAddressAndStopsOnSIGTERM() throws {
        let path = try write("""
        listen: "127.0.0.1:0"
        credentials:
          api:
            type: static
            tokenEnv: MY_TOKEN
        routes:
          - host: "api.test"
            upstream: "http://127.0.0.1:9"
            credential: api
        """)
        let process = Process()
        process.executableURL = Self.binary
        process.arguments = ["run", "--config", path]
        process.environment = childEnvironment(["MY_TOKEN": "SENTINEL-SECRET-3"])
        let err = Pipe()
        process.standardError = err
        try process.run()
        // The first log line announces the bound address as JSON (stderr is not a terminal).
        var line = Data()
        while true {
            let byte = err.fileHandleForReading.readData(ofLength: 1)
            if byte.isEmpty || byte == Data([10]) { break }
            line.append(byte)
        }
        let object = try XCTUnwrap(try JSONSerialization.jsonObject(with: line) as? [String: Any], String(decoding: line, as: UTF8.self))
        XCTAssertEqual(object["msg"] as? String, "listening")
        let address = try XCTUnwrap(object["address"] as? String)
        XCTAssertTrue(address.hasPrefix("127.0.0.1:"))
        XCTAssertNotEqual(address, "127.0.0.1:0")
        process.terminate() // SIGTERM
        process.waitUntilExit()
        XCTAssertEqual(process.terminationStatus, 0)
        let rest = String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        XCTAssertFalse(rest.contains("SENTINEL-SECRET-3"))
        for logLine in rest.split(separator: "\n") {
            XCTAssertNotNil(try? JSONSerialization.jsonObject(with: Data(logLine.utf8)), "not JSON: \(logLine)")
        }
    }
}
