import Foundation

/// A throwaway certificate authority made with the `openssl` CLI in a temporary directory:
/// the CA itself, a server certificate for `localhost` (SAN DNS:localhost and IP:127.0.0.1)
/// and a server certificate for `other.test` only, both signed by the CA. EC P-256 keys keep it fast.
public final class TestCA {
    public let directory: URL
    /// The CA certificate (PEM): the `caFile` that trusts both server certificates.
    public var caCert: String { path("ca.pem") }
    public var caKey: String { path("ca.key") }
    /// Server certificate for `localhost` with SAN `DNS:localhost, IP:127.0.0.1`.
    public var localhostCert: String { path("localhost.pem") }
    public var localhostKey: String { path("localhost.key") }
    /// Server certificate whose only name is `other.test`.
    public var otherCert: String { path("other.pem") }
    public var otherKey: String { path("other.key") }

    public init() throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("testca-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        do {
            try TestCA.openssl([
                "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
                "-keyout", caKey, "-out", caCert, "-days", "2", "-subj", "/CN=token-sidecar test CA",
                "-addext", "basicConstraints=critical,CA:TRUE",
                "-addext", "keyUsage=critical,keyCertSign,cRLSign",
            ])
            try issue(name: "localhost", subject: "/CN=localhost", subjectAltName: "DNS:localhost,IP:127.0.0.1")
            try issue(name: "other", subject: "/CN=other.test", subjectAltName: "DNS:other.test")
        } catch {
            try? FileManager.default.removeItem(at: directory)
            throw error
        }
    }

    deinit { try? FileManager.default.removeItem(at: directory) }

    public func path(_ name: String) -> String { directory.appendingPathComponent(name).path }

    /// A client certificate `<name>.pem` / `<name>.key` with subject CN `commonName`, signed by
    /// the CA: an RSA 2048 key when `rsa` (the MCA certificate flow signs RS256), else EC P-256.
    public func issueClient(name: String, commonName: String, rsa: Bool = false) throws {
        try issue(name: name, subject: "/CN=\(commonName)", subjectAltName: nil, usage: "clientAuth", rsa: rsa)
    }

    /// A key, a CSR and a certificate `<name>.pem` / `<name>.key` signed by the CA.
    private func issue(name: String, subject: String, subjectAltName: String?, usage: String = "serverAuth", rsa: Bool = false) throws {
        let extensions = path("\(name).ext")
        try """
        basicConstraints = critical,CA:FALSE
        keyUsage = critical,digitalSignature\(rsa ? ",keyEncipherment" : "")
        extendedKeyUsage = \(usage)
        \(subjectAltName.map { "subjectAltName = \($0)" } ?? "")

        """.write(toFile: extensions, atomically: true, encoding: .utf8)
        let key = rsa ? ["-newkey", "rsa:2048"] : ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1"]
        try TestCA.openssl(["req", "-new"] + key + [
            "-nodes", "-keyout", path("\(name).key"), "-out", path("\(name).csr"), "-subj", subject,
        ])
        try TestCA.openssl([
            "x509", "-req", "-in", path("\(name).csr"), "-CA", caCert, "-CAkey", caKey,
            "-set_serial", String(UInt32.random(in: 1...UInt32.max)), "-days", "2", "-sha256",
            "-extfile", extensions, "-out", path("\(name).pem"),
        ])
    }

    /// Runs `openssl` with `arguments`; throws with its stderr when it fails.
    public static func openssl(_ arguments: [String]) throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["openssl"] + arguments
        process.environment = ["PATH": ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"]
        let err = Pipe()
        process.standardOutput = FileHandle.nullDevice
        process.standardError = err
        try process.run()
        let errData = err.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw TestClientError.malformed("openssl \(arguments.first ?? "") failed: \(String(decoding: errData, as: UTF8.self))")
        }
    }
}
