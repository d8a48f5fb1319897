@testable import Crypto
import Foundation
import TestSupport
import XCTest

/// The generated interception CA's Name Constraints close every name type a TLS client matches
/// a host against, so a stolen CA key vouches for nothing outside the intercepting routes.
///
/// The first tests check the subtrees the CA is given (no OpenSSL needed). The rest play the
/// thief: `Fixtures/twin_ca_verify.py` makes a twin of a CA this code generated (a new key, the
/// same extensions byte for byte), signs leaves for names inside and outside the routes, and
/// asks three verifiers whether a client connecting to that name would accept them: `openssl
/// verify -x509_strict`, Python's `ssl` (a real handshake between two in-memory TLS objects) and
/// pyca/cryptography's own Rust verifier (from the test-only virtual environment `make
/// peers-venv` builds; required in CI).
final class InterceptNameConstraintsTests: XCTestCase {
    // MARK: - the subtrees

    private func entries(_ names: [String]) throws -> [String] {
        InterceptNameConstraints(try names.map { try InterceptName($0) }).entries
    }

    func testADNSOnlyConfigurationExcludesEveryAddress() throws {
        XCTAssertEqual(try entries(["api.test"]),
                       ["permitted;DNS:api.test", "excluded;IP:0.0.0.0/0.0.0.0", "excluded;IP:::/::"])
        XCTAssertEqual(try entries(["*.example.com", "API.test", "api.test"]),
                       ["permitted;DNS:.example.com", "permitted;DNS:api.test", "excluded;IP:0.0.0.0/0.0.0.0", "excluded;IP:::/::"])
    }

    func testAnIPOnlyConfigurationPermitsOnlyTheReservedInvalidDomain() throws {
        XCTAssertEqual(try entries(["10.0.0.7", "[fd00::7]"]),
                       ["permitted;DNS:invalid", "permitted;IP:10.0.0.7/255.255.255.255",
                        "permitted;IP:fd00::7/ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff"])
        // A family without a route is excluded whole, even beside the other family's permits.
        XCTAssertEqual(try entries(["127.0.0.1"]),
                       ["permitted;DNS:invalid", "permitted;IP:127.0.0.1/255.255.255.255", "excluded;IP:::/::"])
        XCTAssertEqual(try entries(["::1"]),
                       ["permitted;DNS:invalid", "excluded;IP:0.0.0.0/0.0.0.0",
                        "permitted;IP:::1/ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff"])
    }

    func testAMixedConfigurationPermitsEachRouteOnly() throws {
        XCTAssertEqual(try entries(["api.test", "127.0.0.1", "::1"]),
                       ["permitted;DNS:api.test", "permitted;IP:127.0.0.1/255.255.255.255",
                        "permitted;IP:::1/ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff"])
        XCTAssertTrue(InterceptNameConstraints([.dns("a.test")]).extensionValue.hasPrefix("critical,permitted;DNS:a.test,"))
    }

    /// What `openssl x509 -text` shows of a generated CA: the subtrees above, critical.
    func testTheGeneratedCACarriesThemCritical() throws {
        let authority = try InterceptAuthority.generate(permittedNames: ["10.0.0.7"])
        XCTAssertTrue(authority.isNameConstrained)
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let ca = directory.appendingPathComponent("ca.pem")
        try Data(authority.certificatePEM.utf8).write(to: ca)
        let text = try Command.run(["openssl", "x509", "-in", ca.path, "-noout", "-text"]).out
        let block = text.components(separatedBy: "X509v3 Name Constraints: critical").dropFirst().first?
            .components(separatedBy: "Signature Algorithm").first ?? ""
        let shown = block.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
        XCTAssertEqual(shown, ["Permitted:", "DNS:invalid", "IP:10.0.0.7/255.255.255.255",
                               "Excluded:", "IP:0:0:0:0:0:0:0:0/0:0:0:0:0:0:0:0"], text)
    }

    // MARK: - a stolen key, judged by three verifiers

    /// A leaf the twin signs: its SANs (`DNS:…`, `IP:…`), an optional subject CN, and the host a
    /// client connects to.
    private struct Leaf {
        let id: String
        let host: String
        let sans: [String]
        var cn: String?
        init(_ id: String, host: String, sans: [String], cn: String? = nil) {
            self.id = id
            self.host = host
            self.sans = sans
            self.cn = cn
        }
        init(_ san: String) {
            let value = String(san.drop { $0 != ":" }.dropFirst())
            self.init(san, host: value, sans: [san])
        }
    }

    func testADNSOnlyCAVouchesForNoAddressAndNoOtherName() throws {
        let verdicts = try judge(routes: ["api.test"],
                                 accepted: [Leaf("DNS:api.test"), Leaf("route by its CN too", host: "api.test", sans: ["DNS:api.test"], cn: "api.test"),
                                            Leaf("route, host in capitals", host: "API.Test", sans: ["DNS:api.test"]),
                                            // RFC 5280: a DNS subtree holds the names below it.
                                            Leaf("DNS:x.api.test")],
                                 rejected: [Leaf("IP:10.9.8.7"), Leaf("IP:127.0.0.1"), Leaf("IP:::1"), Leaf("DNS:other.test"),
                                            Leaf("other.test in capitals", host: "other.test", sans: ["DNS:OTHER.Test"]),
                                            Leaf("other.test with a trailing dot", host: "other.test", sans: ["DNS:other.test."]),
                                            Leaf("host other.test. (trailing dot)", host: "other.test.", sans: ["DNS:other.test."]),
                                            Leaf("DNS:evilapi.test"), Leaf("DNS:api.test.evil"), Leaf("DNS:test"),
                                            Leaf("route name beside an address", host: "10.9.8.7", sans: ["DNS:api.test", "IP:10.9.8.7"]),
                                            Leaf("subject CN only", host: "other.test", sans: [], cn: "other.test")])
        XCTAssertTrue(verdicts.verifiers.contains("openssl") && verdicts.verifiers.contains("python_ssl"))
    }

    func testAnIPOnlyCAVouchesForNoDNSNameAndNoOtherAddress() throws {
        _ = try judge(routes: ["127.0.0.1"],
                      accepted: [Leaf("IP:127.0.0.1"),
                                 // The one DNS subtree left: RFC 6761's `.invalid`, which never resolves.
                                 Leaf("DNS:x.invalid")],
                      rejected: [Leaf("DNS:api.test"), Leaf("DNS:localhost"), Leaf("IP:127.0.0.2"), Leaf("IP:10.9.8.7"),
                                 Leaf("IP:::1"), Leaf("IP:::ffff:127.0.0.1"),
                                 Leaf("route address beside a name", host: "127.0.0.1", sans: ["IP:127.0.0.1", "DNS:api.test"]),
                                 Leaf("subject CN only", host: "api.test", sans: [], cn: "api.test")])
        _ = try judge(routes: ["[fd00::7]"],
                      accepted: [Leaf("IP:fd00::7")],
                      rejected: [Leaf("IP:fd00::8"), Leaf("IP:10.9.8.7"), Leaf("IP:127.0.0.1"), Leaf("DNS:api.test")])
    }

    func testAMixedCAVouchesForNothingOutsideTheRoutes() throws {
        _ = try judge(routes: ["api.test", "10.0.0.7", "fd00::7"],
                      accepted: [Leaf("DNS:api.test"), Leaf("IP:10.0.0.7"), Leaf("IP:fd00::7"),
                                 Leaf("every route at once", host: "10.0.0.7", sans: ["DNS:api.test", "IP:10.0.0.7", "IP:fd00::7"])],
                      rejected: [Leaf("DNS:other.test"), Leaf("IP:10.0.0.8"), Leaf("IP:fd00::8"), Leaf("IP:127.0.0.1"),
                                 Leaf("IP:::1"), Leaf("DNS:x.invalid"),
                                 Leaf("a route beside another name", host: "10.0.0.7", sans: ["IP:10.0.0.7", "DNS:other.test"])])
    }

    /// A wildcard route is `.suffix`, subdomains only: OpenSSL (so Python's `ssl`) honours the
    /// leading dot, pyca/cryptography refuses it as malformed (and so every leaf of such a CA;
    /// the README says so), so only the first two verifiers are asked.
    func testAWildcardCAVouchesForSubdomainsOnly() throws {
        _ = try judge(routes: ["*.wild.test", "10.0.0.7"],
                      accepted: [Leaf("DNS:a.wild.test"), Leaf("DNS:b.a.wild.test"), Leaf("IP:10.0.0.7")],
                      rejected: [Leaf("DNS:wild.test"), Leaf("DNS:other.test"), Leaf("DNS:xwild.test"), Leaf("IP:10.9.8.7"), Leaf("IP:::1")],
                      verifiers: ["openssl", "python_ssl"])
    }

    // MARK: - helpers

    private struct Verdicts {
        var verifiers: [String]
    }

    /// Generates a CA for `routes`, has the fixture sign each leaf with its twin, and checks that
    /// every verifier (of `verifiers`, when given) accepts exactly the `accepted` ones.
    @discardableResult
    private func judge(routes: [String], accepted: [Leaf], rejected: [Leaf], verifiers only: [String]? = nil,
                       file: StaticString = #filePath, line: UInt = #line) throws -> Verdicts {
        let authority = try InterceptAuthority.generate(permittedNames: routes)
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let ca = directory.appendingPathComponent("ca.pem")
        try Data(authority.certificatePEM.utf8).write(to: ca)
        let cases: [[String: Any]] = (accepted + rejected).map { leaf in
            ["id": leaf.id, "host": leaf.host, "sans": leaf.sans, "cn": leaf.cn ?? NSNull()]
        }
        let outcome = try Command.run([PeersPython.path, Self.script.path, ca.path, directory.path],
                                      stdin: try JSONSerialization.data(withJSONObject: cases), timeout: 120)
        XCTAssertEqual(outcome.status, 0, String(outcome.err.suffix(2000)), file: file, line: line)
        let report = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(outcome.out.utf8)) as? [String: Any],
                                   file: file, line: line)
        XCTAssertEqual(report["twin_constraints_equal"] as? Bool, true, "the twin carries the CA's constraints", file: file, line: line)
        let ran = report["verifiers"] as? [String] ?? []
        if ProcessInfo.processInfo.environment["CI"] == "true" && only == nil {
            XCTAssertTrue(ran.contains("cryptography"), "CI runs pyca/cryptography's verifier (make peers-venv)", file: file, line: line)
        }
        let asked = ran.filter { only?.contains($0) ?? true }
        let results = report["results"] as? [String: [String: [String: Any]]] ?? [:]
        for (leaf, expected) in accepted.map({ ($0, true) }) + rejected.map({ ($0, false) }) {
            for verifier in asked {
                let verdict = results[leaf.id]?[verifier]
                XCTAssertEqual(verdict?["ok"] as? Bool, expected,
                               "\(routes) \(leaf.id) by \(verifier): \(verdict?["why"] as? String ?? "no verdict")", file: file, line: line)
            }
        }
        return Verdicts(verifiers: ran)
    }

    private func temporaryDirectory() throws -> URL {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("constraints-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        return directory
    }

    private static let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("Fixtures/twin_ca_verify.py")
}
