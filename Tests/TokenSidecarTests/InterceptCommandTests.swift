import Foundation
import TestSupport
import XCTest

/// The interception CA as an operator sees it: `check` (settings shown, key never), `ca`
/// (the certificate apps trust), `run` (the generated CA written, its key nowhere), and the
/// configuration errors that exit 2 naming the key.
final class InterceptCommandTests: XCTestCase {
    private var directory: URL!

    override func setUpWithError() throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("intercept-cli-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    }

    override func tearDown() {
        try? FileManager.default.removeItem(at: directory)
    }

    private func path(_ name: String) -> String { directory.appendingPathComponent(name).path }

    private func config(intercept: String) throws -> String {
        try writeConfig("""
            listen: "127.0.0.1:0"
            admin: "127.0.0.1:0"
            \(intercept)
            credentials:
              api: {type: static, token: "SENTINEL-TOKEN-7"}
            routes:
              - host: "api.example.com:443"
                intercept: true
                credential: api
              - host: "*.svc.example.com:8443"
                intercept: true
            """)
    }

    /// An operator CA (and a leaf that is not a CA) made with the openssl CLI.
    private func makeOperatorCA() throws {
        for arguments in [
            ["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-keyout", path("ca.key"),
             "-out", path("ca.crt"), "-subj", "/CN=operator CA", "-days", "2",
             "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign"],
            ["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-keyout", path("leaf.key"),
             "-out", path("leaf.crt"), "-subj", "/CN=not a CA", "-days", "2", "-addext", "basicConstraints=critical,CA:FALSE"],
        ] {
            XCTAssertEqual(try Command.run(["openssl"] + arguments).status, 0)
        }
    }

    func testCheckShowsTheInterceptSettingsAndCAPrintsTheOperatorsCertificate() throws {
        try makeOperatorCA()
        let file = try config(intercept: "intercept: {caCertFile: \(path("ca.crt")), caKeyFile: \(path("ca.key"))}")
        let check = try runSidecar(["check", "--config", file])
        XCTAssertEqual(check.status, 0, check.err)
        XCTAssertTrue(check.out.contains("intercept:\n  caCertFile: \"\(path("ca.crt"))\""), check.out)
        XCTAssertTrue(check.out.contains("    intercept: true"), check.out)
        XCTAssertTrue(check.out.contains("upstream: \"https://api.example.com:443\""), "the default upstream: \(check.out)")
        let ca = try runSidecar(["ca", "--config", file])
        XCTAssertEqual(ca.status, 0, ca.err)
        XCTAssertEqual(ca.out, try String(contentsOfFile: path("ca.crt"), encoding: .utf8))
        let key = try String(contentsOfFile: path("ca.key"), encoding: .utf8)
        let keyBody = key.split(separator: "\n").dropFirst().first.map(String.init) ?? key
        for output in [check.out, check.err, ca.out, ca.err] {
            XCTAssertFalse(output.contains("PRIVATE KEY"))
            XCTAssertFalse(output.contains(keyBody), "no line of the CA key is ever printed")
        }
    }

    /// An operator CA without Name Constraints is accepted, and `check` and the start-up log say
    /// once that it can vouch for any name; a constrained one draws no warning.
    func testAnUnconstrainedOperatorCAIsAcceptedWithOneWarning() throws {
        try makeOperatorCA()
        let file = try config(intercept: "intercept: {caCertFile: \(path("ca.crt")), caKeyFile: \(path("ca.key"))}")
        let check = try runSidecar(["check", "--config", file])
        XCTAssertEqual(check.status, 0, check.err)
        let warnings = check.err.split(separator: "\n").filter { $0.contains("vouch for any") }
        XCTAssertEqual(warnings.count, 1, check.err)
        XCTAssertTrue(warnings.first?.hasPrefix("\(file): intercept.caKeyFile: warning: the interception CA has no X.509 Name Constraints")
                      ?? false, check.err)
        let sidecar = try CapturedSidecar(configPath: file)
        let log = sidecar.text()
        sidecar.stop()
        XCTAssertEqual(log.components(separatedBy: "vouch for any host name").count - 1, 1, log)

        XCTAssertEqual(try Command.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
                                        "-keyout", path("nc.key"), "-out", path("nc.crt"), "-subj", "/CN=constrained CA", "-days", "2",
                                        "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign",
                                        "-addext", "nameConstraints=critical,permitted;DNS:example.com"]).status, 0)
        let constrained = try config(intercept: "intercept: {caCertFile: \(path("nc.crt")), caKeyFile: \(path("nc.key"))}")
        let quiet = try runSidecar(["check", "--config", constrained])
        XCTAssertEqual(quiet.status, 0, quiet.err)
        XCTAssertFalse(quiet.err.contains("vouch for any"), quiet.err)
    }

    func testABadOperatorCAOrAnUnwritableDirectoryExits2NamingTheKey() throws {
        try makeOperatorCA()
        let notCA = try config(intercept: "intercept: {caCertFile: \(path("leaf.crt")), caKeyFile: \(path("leaf.key"))}")
        let refused = try runSidecar(["check", "--config", notCA])
        XCTAssertEqual(refused.status, 2)
        XCTAssertTrue(refused.err.contains("intercept.caKeyFile"), refused.err)
        let mismatched = try config(intercept: "intercept: {caCertFile: \(path("ca.crt")), caKeyFile: \(path("leaf.key"))}")
        XCTAssertEqual(try runSidecar(["check", "--config", mismatched]).status, 2)
        let missingDirectory = try config(intercept: "intercept: {caCertFile: \(path("nowhere/ca.crt"))}")
        for command in ["check", "run"] {
            let outcome = try runSidecar([command, "--config", missingDirectory])
            XCTAssertEqual(outcome.status, 2, command)
            XCTAssertTrue(outcome.err.contains("intercept.caCertFile: the directory"), outcome.err)
        }
        let noSection = try writeConfig("""
            routes:
              - host: "api.example.com:443"
                intercept: true
            """)
        let outcome = try runSidecar(["check", "--config", noSection])
        XCTAssertEqual(outcome.status, 2)
        XCTAssertTrue(outcome.err.contains("routes[0].intercept: needs the top-level intercept section"), outcome.err)
        let port80 = try writeConfig("""
            intercept: {caCertFile: \(path("ca2.crt"))}
            routes:
              - host: "api.example.com"
                intercept: true
            """)
        let noPort = try runSidecar(["check", "--config", port80])
        XCTAssertEqual(noPort.status, 2)
        XCTAssertTrue(noPort.err.contains("api.example.com:443"), noPort.err)
        XCTAssertEqual(try runSidecar(["ca", "--config", try writeConfig("listen: \"127.0.0.1:0\"\n")]).status, 2)
    }

    func testRunGeneratesANameConstrainedCAWritesOnlyItsCertificateAndLogsNoKey() throws {
        let file = try config(intercept: "intercept: {caCertFile: \(path("ca.crt")), bundleFile: \(path("bundle.pem"))}")
        XCTAssertEqual(try runSidecar(["ca", "--config", file]).status, 2, "no certificate before the sidecar ran")
        let sidecar = try CapturedSidecar(configPath: file)
        defer { sidecar.stop() }
        let certificate = try String(contentsOfFile: path("ca.crt"), encoding: .utf8)
        XCTAssertTrue(certificate.hasPrefix("-----BEGIN CERTIFICATE-----"))
        let ca = try runSidecar(["ca", "--config", file])
        XCTAssertEqual(ca.out, certificate, "ca prints what the running sidecar wrote")
        let files = try FileManager.default.contentsOfDirectory(atPath: directory.path).sorted()
        XCTAssertEqual(files, ["bundle.pem", "ca.crt"], "the key never touches disk")
        let text = try Command.run(["openssl", "x509", "-in", path("ca.crt"), "-noout", "-text"]).out
        XCTAssertTrue(text.contains("X509v3 Name Constraints: critical"), text)
        XCTAssertTrue(text.contains("DNS:api.example.com"), text)
        XCTAssertTrue(text.contains("DNS:.svc.example.com"), text)
        // No route is an address: every address is excluded, IPv4 and IPv6.
        XCTAssertTrue(text.contains("Excluded:\n                  IP:0.0.0.0/0.0.0.0\n                  IP:0:0:0:0:0:0:0:0/0:0:0:0:0:0:0:0"),
                      text)
        let log = sidecar.text()
        XCTAssertTrue(log.contains("intercepting https"), log)
        XCTAssertFalse(log.contains("vouch for any"), "a generated CA is constrained: \(log)")
        XCTAssertFalse(log.contains("PRIVATE KEY"))
        XCTAssertFalse(log.contains("SENTINEL-TOKEN-7"))
    }
}
