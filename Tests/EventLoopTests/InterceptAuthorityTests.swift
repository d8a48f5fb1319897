@testable import Crypto
@testable import EventLoop
import Foundation
import XCTest

/// The interception CA, checked by an independent verifier: the `openssl` CLI (`verify`,
/// `x509 -text`, `s_client`). Name constraints must stop the CA from vouching for any other
/// host; minted leaves must verify and serve TLS with ALPN `http/1.1`.
///
/// Nothing secret is printed: failure messages quote only the lines a check looks for, never
/// whole `s_client` output (it contains the session's master key) nor any key file.
final class InterceptAuthorityTests: XCTestCase {
    private var directory: URL!

    override func setUpWithError() throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("intercept-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    }

    override func tearDown() { try? FileManager.default.removeItem(at: directory) }

    // MARK: - helpers

    private func path(_ name: String) -> String { directory.appendingPathComponent(name).path }

    private func write(_ text: String, to name: String) throws {
        try Data(text.utf8).write(to: URL(fileURLWithPath: path(name)))
    }

    private func bytes(_ name: String) throws -> [UInt8] { Array(try Data(contentsOf: URL(fileURLWithPath: path(name)))) }

    /// An `openssl` process started with no input; its stdout and stderr go to a file.
    private struct Launched {
        let process: Process
        let outputPath: String
        let exited: Locked<Bool>
        var hasExited: Bool { exited.withLock { $0 } }
    }

    private func launch(_ arguments: [String]) throws -> Launched {
        let outputPath = path("output-\(UUID().uuidString)")
        _ = FileManager.default.createFile(atPath: outputPath, contents: nil)
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: outputPath))
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["openssl"] + arguments
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = handle
        process.standardError = handle
        let exited = Locked(false)
        process.terminationHandler = { _ in exited.withLock { $0 = true } }
        try process.run()
        try handle.close()
        return Launched(process: process, outputPath: outputPath, exited: exited)
    }

    /// Waits (at most `seconds`; a process still running then is killed and the test fails)
    /// and returns the exit status and everything printed.
    private func finish(_ launched: Launched, within seconds: Double = 20) -> (status: Int32, output: String) {
        let deadline = Date().addingTimeInterval(seconds)
        while !launched.hasExited && Date() < deadline { usleep(10_000) }
        guard launched.hasExited else {
            kill(launched.process.processIdentifier, SIGKILL)
            XCTFail("openssl \(launched.process.arguments?.dropFirst().first ?? "") did not finish within \(seconds) s")
            return (-1, "")
        }
        let output = (try? String(contentsOfFile: launched.outputPath, encoding: .utf8)) ?? ""
        return (launched.process.terminationStatus, output)
    }

    @discardableResult
    private func openssl(_ arguments: [String]) throws -> (status: Int32, output: String) {
        finish(try launch(arguments))
    }

    /// The lines of `output` that contain one of `markers` (what a failure message may show).
    private func lines(of output: String, with markers: [String]) -> String {
        output.split(separator: "\n").filter { line in markers.contains { line.contains($0) } }.joined(separator: "\n")
    }

    /// `openssl verify` of a leaf minted by `authority` for `host` (with the hostname or IP check
    /// a client would make): the exit status and the verifier's verdict lines.
    private func verify(_ authority: InterceptAuthority, host: String) throws -> (ok: Bool, output: String) {
        let leaf = try authority.mintLeaf(for: host)
        try write(authority.certificatePEM, to: "ca.pem")
        try write(leaf.certificatePEM, to: "leaf.pem")
        let bare = host.hasPrefix("[") ? String(host.dropFirst().dropLast()) : host
        let check = bare.contains(":") || bare.allSatisfy({ $0.isNumber || $0 == "." }) ? ["-verify_ip", bare] : ["-verify_hostname", bare]
        let result = try openssl(["verify", "-x509_strict", "-purpose", "sslserver"] + check
                                 + ["-CAfile", path("ca.pem"), path("leaf.pem")])
        return (result.status == 0, result.output)
    }

    /// Runs `loop` on this thread until `condition` holds (checked every 5 ms), at most 20 s.
    private func runLoop(_ loop: EventLoop, until condition: @escaping () -> Bool) -> Bool {
        let deadline = ContinuousClock.now + .seconds(20)
        let check = LoopTimer(on: loop, after: .zero, repeating: .milliseconds(5)) {
            if condition() || ContinuousClock.now >= deadline { loop.stop() }
        }
        loop.run()
        check.cancel()
        return condition()
    }

    // MARK: - (a)–(d) verification and name constraints

    func testALeafForThePermittedNameVerifies() throws {
        let authority = try InterceptAuthority.generate(permittedNames: ["api.example.com"])
        let result = try verify(authority, host: "api.example.com")
        XCTAssertTrue(result.ok, result.output)
        XCTAssertTrue(result.output.contains("leaf.pem: OK"), result.output)
        // Hosts compare case-insensitively; the leaf is minted for the lowercase name.
        XCTAssertTrue(try verify(authority, host: "API.Example.COM").ok)
    }

    func testALeafOutsideTheConstraintsFailsVerification() throws {
        let authority = try InterceptAuthority.generate(permittedNames: ["api.example.com"])
        let result = try verify(authority, host: "evil.test")
        XCTAssertFalse(result.ok, result.output)
        XCTAssertTrue(result.output.contains("permitted subtree violation"), result.output)
        XCTAssertFalse(try verify(authority, host: "example.com").ok, "the parent domain is outside the subtree")
    }

    func testAWildcardPermitsSubdomainsOnly() throws {
        let authority = try InterceptAuthority.generate(permittedNames: ["*.example.com"])
        XCTAssertTrue(try verify(authority, host: "a.example.com").ok)
        XCTAssertTrue(try verify(authority, host: "deep.a.example.com").ok)
        let other = try verify(authority, host: "example.org")
        XCTAssertFalse(other.ok)
        XCTAssertTrue(other.output.contains("permitted subtree violation"), other.output)
        XCTAssertFalse(try verify(authority, host: "example.com").ok, "a wildcard does not cover the bare domain")
    }

    func testIPRoutesGetIPSubjectAltNames() throws {
        let authority = try InterceptAuthority.generate(permittedNames: ["127.0.0.1", "[::1]"])
        let v4 = try verify(authority, host: "127.0.0.1")
        XCTAssertTrue(v4.ok, v4.output)
        XCTAssertTrue(try verify(authority, host: "[::1]").ok)
        XCTAssertTrue(try verify(authority, host: "::1").ok)
        XCTAssertFalse(try verify(authority, host: "127.0.0.2").ok)
        let text = try openssl(["x509", "-in", path("leaf.pem"), "-noout", "-text"]).output
        XCTAssertTrue(text.contains("IP Address:127.0.0.2"), lines(of: text, with: ["IP Address", "DNS:"]))
        XCTAssertTrue(text.contains("X509v3 Subject Alternative Name: critical"), lines(of: text, with: ["Alternative"]))
        XCTAssertFalse(text.contains("DNS:"))
        // An address leaf has an empty subject (its SAN is critical, as RFC 5280 then requires).
        let subject = try openssl(["x509", "-in", path("leaf.pem"), "-noout", "-subject"]).output
        XCTAssertEqual(subject.trimmingCharacters(in: .whitespacesAndNewlines), "subject=")
    }

    /// A CA for DNS names and addresses together: an IP leaf's CN (which looks like a DNS name
    /// to OpenSSL) must not trip the DNS constraints, nor a DNS leaf the IP ones.
    func testMixedConstraintsAcceptEachKindOfLeaf() throws {
        let authority = try InterceptAuthority.generate(permittedNames: ["api.example.com", "*.internal.test", "10.0.0.7", "fd00::7"])
        for host in ["api.example.com", "x.internal.test", "10.0.0.7", "[fd00::7]"] {
            let result = try verify(authority, host: host)
            XCTAssertTrue(result.ok, "\(host): \(result.output)")
        }
        for host in ["evil.test", "internal.test", "10.0.0.8", "fd00::8"] {
            XCTAssertFalse(try verify(authority, host: host).ok, host)
        }
    }

    func testTheLeafCarriesWhatAServerCertificateNeeds() throws {
        let authority = try InterceptAuthority.generate(permittedNames: ["*.example.com"], validity: .seconds(3 * 24 * 3600))
        let long = String(repeating: "a", count: 60) + "." + String(repeating: "b", count: 20) + ".example.com"
        let result = try verify(authority, host: long)
        XCTAssertTrue(result.ok, result.output)
        let text = try openssl(["x509", "-in", path("leaf.pem"), "-noout", "-text"]).output
        let markers = ["Version", "CA:", "Digital Signature", "TLS Web Server Authentication", "DNS:", "Subject:", "Not After", "keyid"]
        let shown = lines(of: text, with: markers)
        XCTAssertTrue(text.contains("Version: 3 (0x2)"), shown)
        XCTAssertTrue(text.contains("CA:FALSE"), shown)
        XCTAssertTrue(text.contains("Digital Signature"), shown)
        XCTAssertTrue(text.contains("TLS Web Server Authentication"), shown)
        XCTAssertTrue(text.contains("DNS:\(long)"), shown)
        XCTAssertTrue(text.contains("CN = \(long.prefix(64))") && !text.contains("CN = \(long.prefix(65))"), shown)
        // The leaf asks for 7 days but never outlives its 3-day CA.
        let leafEnd = try openssl(["x509", "-in", path("leaf.pem"), "-noout", "-enddate"]).output
        let caEnd = try openssl(["x509", "-in", path("ca.pem"), "-noout", "-enddate"]).output
        XCTAssertEqual(leafEnd, caEnd)
        XCTAssertEqual(try openssl(["x509", "-in", path("leaf.pem"), "-noout", "-checkend", String(2 * 24 * 3600)]).status, 0)
    }

    // MARK: - (e) the CA certificate

    func testTheCACertificateIsAConstrainedCA() throws {
        let authority = try InterceptAuthority.generate(permittedNames: ["api.example.com", "*.example.org", "127.0.0.1"])
        try write(authority.certificatePEM, to: "ca.pem")
        XCTAssertFalse(authority.certificatePEM.contains("PRIVATE"))
        XCTAssertTrue(authority.certificatePEM.hasPrefix("-----BEGIN CERTIFICATE-----"))
        let text = try openssl(["x509", "-in", path("ca.pem"), "-noout", "-text"]).output
        let shown = lines(of: text, with: ["Version", "critical", "CA:", "DNS:", "IP:", "Sign", "Subject", "Issuer", "Signature Algorithm", "Public-Key"])
        for expected in ["Version: 3 (0x2)", "X509v3 Name Constraints: critical", "X509v3 Basic Constraints: critical",
                         "CA:TRUE, pathlen:0", "X509v3 Key Usage: critical", "Certificate Sign, CRL Sign",
                         "X509v3 Subject Key Identifier", "DNS:api.example.com", "DNS:.example.org",
                         "IP:127.0.0.1/255.255.255.255", "Subject: CN = token-sidecar interception CA",
                         "Issuer: CN = token-sidecar interception CA", "ecdsa-with-SHA256", "NIST CURVE: P-256"] {
            XCTAssertTrue(text.contains(expected), "missing \(expected) in:\n\(shown)")
        }
        // Valid from an hour ago (clock skew) for 30 days.
        XCTAssertEqual(try openssl(["x509", "-in", path("ca.pem"), "-noout", "-checkend", String(29 * 24 * 3600)]).status, 0)
        XCTAssertNotEqual(try openssl(["x509", "-in", path("ca.pem"), "-noout", "-checkend", String(31 * 24 * 3600)]).status, 0)
        // The fingerprint is the SHA-256 of the DER, as openssl computes it.
        let printed = try openssl(["x509", "-in", path("ca.pem"), "-noout", "-fingerprint", "-sha256"]).output
        let expected = printed.split(separator: "=").last.map { $0.replacingOccurrences(of: ":", with: "").lowercased() }
        XCTAssertEqual(authority.fingerprint, expected?.trimmingCharacters(in: .whitespacesAndNewlines))
        // Every generated CA is new: another key, another serial.
        let again = try InterceptAuthority.generate(permittedNames: ["api.example.com"])
        XCTAssertNotEqual(again.fingerprint, authority.fingerprint)
    }

    func testBadNamesAreRefused() {
        for names in [[], ["bad,name"], ["DNS:x.test"], ["a..b"], ["-x.test"], ["ex ample.com"]] {
            XCTAssertThrowsError(try InterceptAuthority.generate(permittedNames: names), "\(names)")
        }
        let authority = try? InterceptAuthority.generate(permittedNames: ["*.example.com"])
        XCTAssertThrowsError(try authority?.mintLeaf(for: "*.example.com"))
        XCTAssertThrowsError(try authority?.mintLeaf(for: "a.example.com,DNS:evil.test"))
        XCTAssertThrowsError(try authority?.mintLeaf(for: "a.example.com", validity: .zero))
        XCTAssertThrowsError(try InterceptAuthority.generate(permittedNames: ["a.test"], validity: .seconds(-1)))
    }

    // MARK: - (f) a real handshake

    /// Accepts TLS connections and counts completed handshakes; reads and drops whatever comes.
    private final class Server: ConnectionDelegate {
        var streams: [any ByteStream] = []
        var handshakes = 0
        func adopt(_ stream: any ByteStream) {
            streams.append(stream)
            stream.delegate = self
            stream.startReading()
        }
        func connectionDidConnect(_ connection: any ByteStream) { handshakes += 1 }
        func connectionDidRead(_ connection: any ByteStream) { connection.input.drain(connection.input.count) }
        func connection(_ connection: any ByteStream, didEnd reason: ConnectionEnd) { connection.close() }
    }

    func testAClientVerifiesTheMintedLeafAndIsOfferedH2ThenHTTP11() throws {
        let authority = try InterceptAuthority.generate(permittedNames: ["api.example.com"])
        try write(authority.certificatePEM, to: "ca.pem")
        try write(try InterceptAuthority.generate(permittedNames: ["api.example.com"]).certificatePEM, to: "other-ca.pem")
        let cache = LeafCache(authority: authority)
        let loop = try EventLoop()
        let server = Server()
        let listener = try Listener(address: SocketAddress(host: "127.0.0.1", port: 0), on: loop,
                                    tls: cache.context(for: "api.example.com")) { server.adopt($0) }
        defer {
            server.streams.forEach { $0.close() }
            listener.close()
        }
        let markers = ["ALPN", "Verif", "Reused", "New,", "Protocol", "ticket lifetime", "error", "errno"]
        func sClient(_ extra: [String], trusting ca: String = "ca.pem") throws -> (status: Int32, output: String, shown: String) {
            let launched = try launch(["s_client", "-connect", "127.0.0.1:\(listener.address.port)", "-servername", "api.example.com",
                                       "-CAfile", path(ca), "-verify_return_error", "-verify_hostname", "api.example.com"] + extra)
            XCTAssertTrue(runLoop(loop) { launched.hasExited }, "s_client finished in time")
            let result = finish(launched)
            return (result.status, result.output, lines(of: result.output, with: markers))
        }

        // The server's preference: h2 first, then http/1.1, whatever order the client lists them in.
        let offered = try sClient(["-alpn", "http/1.1,h2"])
        XCTAssertEqual(offered.status, 0, offered.shown)
        XCTAssertTrue(offered.output.contains("Verify return code: 0 (ok)"), offered.shown)
        XCTAssertTrue(offered.output.contains("ALPN protocol: h2"), offered.shown)

        let http11Only = try sClient(["-alpn", "http/1.1"])
        XCTAssertEqual(http11Only.status, 0, http11Only.shown)
        XCTAssertTrue(http11Only.output.contains("ALPN protocol: http/1.1"), http11Only.shown)

        let neither = try sClient(["-alpn", "spdy/3"])
        XCTAssertEqual(neither.status, 0, neither.shown)
        XCTAssertTrue(neither.output.contains("Verify return code: 0 (ok)"), neither.shown)
        XCTAssertTrue(neither.output.contains("No ALPN negotiated"), neither.shown)

        let withoutALPN = try sClient(["-tls1_3"])
        XCTAssertEqual(withoutALPN.status, 0, withoutALPN.shown)
        XCTAssertTrue(withoutALPN.output.contains("New, TLSv1.3"), withoutALPN.shown)
        XCTAssertTrue(withoutALPN.output.contains("No ALPN negotiated"), withoutALPN.shown)

        // Session tickets are on: a TLS 1.2 client gets one and resumes with it.
        let first = try sClient(["-tls1_2", "-sess_out", path("session.pem")])
        XCTAssertTrue(first.output.contains("New, TLSv1.2"), first.shown)
        XCTAssertTrue(first.output.contains("TLS session ticket lifetime hint"), first.shown)
        let second = try sClient(["-tls1_2", "-sess_in", path("session.pem")])
        XCTAssertTrue(second.output.contains("Reused, TLSv1.2"), second.shown)

        // A client that trusts another CA refuses the leaf.
        let untrusting = try sClient([], trusting: "other-ca.pem")
        XCTAssertNotEqual(untrusting.status, 0, untrusting.shown)
        XCTAssertFalse(untrusting.output.contains("Verify return code: 0 (ok)"), untrusting.shown)

        XCTAssertTrue(runLoop(loop) { server.handshakes >= 5 }, "the server saw \(server.handshakes) handshakes")
        XCTAssertEqual(cache.minted, 1)
    }

    // MARK: - (g) an operator-provided CA

    func testAnOperatorCALoadsAndSigns() throws {
        for keyOption in [["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-384"], ["-newkey", "rsa:2048"],
                          ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256"]] {
            let made = try openssl(["req", "-x509"] + keyOption + ["-nodes", "-keyout", path("op.key"), "-out", path("op.pem"),
                                    "-subj", "/CN=Operator CA", "-days", "2",
                                    "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign"])
            XCTAssertEqual(made.status, 0)
            let authority = try InterceptAuthority(certificatePEM: try bytes("op.pem"), keyPEM: try bytes("op.key"))
            XCTAssertTrue(authority.certificatePEM.contains("BEGIN CERTIFICATE"))
            XCTAssertFalse(authority.certificatePEM.contains("PRIVATE"))
            let result = try verify(authority, host: "anything.example.net")
            XCTAssertTrue(result.ok, "\(keyOption): \(result.output)")
            XCTAssertTrue(try verify(authority, host: "192.0.2.1").ok)
            // A leaf never outlives the 2-day CA.
            XCTAssertNotEqual(try openssl(["x509", "-in", path("leaf.pem"), "-noout", "-checkend", String(3 * 24 * 3600)]).status, 0)
        }
    }

    func testAnOperatorCAThatIsNotACAOrDoesNotMatchIsRefused() throws {
        try openssl(["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout", path("leaf.key"),
                     "-out", path("leaf.pem"), "-subj", "/CN=not a CA", "-days", "2", "-addext", "basicConstraints=critical,CA:FALSE"])
        try openssl(["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout", path("ca.key"),
                     "-out", path("ca.pem"), "-subj", "/CN=Operator CA", "-days", "2", "-addext", "basicConstraints=critical,CA:TRUE"])
        try openssl(["genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out", path("other.key")])
        try openssl(["genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:1024", "-out", path("small.key")])
        try openssl(["req", "-x509", "-key", path("small.key"), "-out", path("small.pem"), "-subj", "/CN=Small CA", "-days", "2",
                     "-addext", "basicConstraints=critical,CA:TRUE"])

        func refusal(_ certificate: String, _ key: String) throws -> String {
            let certificatePEM = try bytes(certificate), keyPEM = try bytes(key)
            do {
                _ = try InterceptAuthority(certificatePEM: certificatePEM, keyPEM: keyPEM)
                XCTFail("\(certificate) with \(key) was accepted")
                return ""
            } catch {
                XCTAssertFalse(error.description.contains("PRIVATE"), error.description)
                return error.description
            }
        }
        XCTAssertTrue(try refusal("leaf.pem", "leaf.key").contains("not a CA"))
        XCTAssertTrue(try refusal("ca.pem", "other.key").contains("does not match"))
        XCTAssertTrue(try refusal("small.pem", "small.key").contains("at least 2048"))
        XCTAssertTrue(try refusal("ca.pem", "ca.pem").contains("not an unencrypted PEM private key"))
        XCTAssertTrue(try refusal("ca.key", "ca.key").contains("not a PEM certificate"))
        // The matching pair loads.
        XCTAssertNoThrow(try InterceptAuthority(certificatePEM: try bytes("ca.pem"), keyPEM: try bytes("ca.key")))
    }

    // MARK: - (h) LeafCache

    func testTheLeafCacheHitsCaseInsensitivelyAndEvictsTheLeastRecentlyUsed() throws {
        let cache = LeafCache(authority: try InterceptAuthority.generate(permittedNames: ["*.example.com"]), capacity: 2)
        let a = try cache.context(for: "a.example.com")
        XCTAssertTrue(try cache.context(for: "A.Example.com") === a)
        XCTAssertEqual(cache.minted, 1)
        XCTAssertEqual(cache.hits, 1)

        let b = try cache.context(for: "b.example.com")
        XCTAssertTrue(try cache.context(for: "a.example.com") === a, "a is now the most recently used")
        _ = try cache.context(for: "c.example.com")  // evicts b
        XCTAssertEqual(cache.count, 2)
        XCTAssertEqual(cache.minted, 3)
        XCTAssertTrue(try cache.context(for: "a.example.com") === a)
        XCTAssertFalse(try cache.context(for: "b.example.com") === b, "b was evicted and minted again")
        XCTAssertEqual(cache.minted, 4)
        XCTAssertEqual(cache.hits, 3)
        XCTAssertEqual(cache.count, 2)
        XCTAssertThrowsError(try cache.context(for: "bad host"))
        XCTAssertEqual(cache.minted, 4)
    }

    /// Worker loops share one cache: every lookup is either a hit or a mint, the counters add
    /// up, and the cache never holds more than its capacity.
    func testTheLeafCacheIsSharedByThreads() throws {
        let cache = LeafCache(authority: try InterceptAuthority.generate(permittedNames: ["*.example.com"]), capacity: 3)
        let failures = Locked(0)
        DispatchQueue.concurrentPerform(iterations: 4) { worker in
            for round in 0..<50 {
                if (try? cache.context(for: "h\((round + worker) % 5).example.com")) == nil { failures.withLock { $0 += 1 } }
            }
        }
        XCTAssertEqual(failures.withLock { $0 }, 0)
        XCTAssertEqual(cache.hits + cache.minted, 200)
        XCTAssertGreaterThanOrEqual(cache.minted, 5)
        XCTAssertLessThanOrEqual(cache.count, 3)
    }
}
