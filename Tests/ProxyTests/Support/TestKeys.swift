import Crypto
import EventLoop
import Foundation
import TestSupport
import TokenManager

/// Keys made with the `openssl` CLI for client-authentication tests, in a temporary directory:
/// PEM private keys (PKCS#8 or traditional) and their public halves.
final class TestKeys {
    let directory: URL

    init() throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("keys-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    }

    deinit { try? FileManager.default.removeItem(at: directory) }

    func path(_ name: String) -> String { directory.appendingPathComponent(name).path }

    /// A new key `<name>.key` (PKCS#8, or traditional `BEGIN RSA/EC PRIVATE KEY` when asked) and
    /// `<name>.pub`; returns the private key's path.
    @discardableResult
    func make(_ name: String, rsa: Bool, traditional: Bool = false) throws -> String {
        let key = path("\(name).key")
        let algorithm = rsa ? ["-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048"]
                            : ["-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256"]
        try TestCA.openssl(["genpkey"] + algorithm + ["-out", key])
        if traditional {
            try TestCA.openssl(["pkey", "-in", key, "-traditional", "-out", key + ".trad"])
            guard rename(key + ".trad", key) == 0 else { throw TestClientError.malformed("rename") }
        }
        try TestCA.openssl(["pkey", "-in", key, "-pubout", "-out", path("\(name).pub")])
        return key
    }

    /// The bytes of a file in this directory.
    func bytes(_ name: String) throws -> [UInt8] { Array(try Data(contentsOf: directory.appendingPathComponent(name))) }
}
