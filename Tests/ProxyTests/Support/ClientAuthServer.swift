import Foundation

/// The verifying authorization server (Fixtures/client_auth_server.py) on 127.0.0.1: it checks
/// client authentication the way a real one does (signatures, claims, jti replay, the TLS
/// client certificate, the IMFCert JWS) and answers 400 `invalid_client` to anything else. The
/// policy is re-read on every request, so a test can change the trusted key mid-run.
final class ClientAuthServer {
    let directory: URL
    private let fixture: FixtureProcess
    var port: Int { fixture.port }
    private var policyURL: URL { directory.appendingPathComponent("policy.json") }
    private var logURL: URL { directory.appendingPathComponent("requests.jsonl") }

    init(policy: [String: Any], tlsCert: String? = nil, tlsKey: String? = nil, clientCA: String? = nil) throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("authserver-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        _ = FileManager.default.createFile(atPath: directory.appendingPathComponent("requests.jsonl").path, contents: nil)
        try ClientAuthServer.write(policy, to: directory)
        var arguments = ["--log", directory.appendingPathComponent("requests.jsonl").path,
                         "--policy", directory.appendingPathComponent("policy.json").path]
        if let tlsCert, let tlsKey { arguments += ["--tls-cert", tlsCert, "--tls-key", tlsKey] }
        if let clientCA { arguments += ["--client-ca", clientCA] }
        fixture = try FixtureProcess(script: "client_auth_server.py", arguments: arguments)
    }

    deinit { try? FileManager.default.removeItem(at: directory) }

    /// Replaces the policy atomically (write, then rename).
    func setPolicy(_ policy: [String: Any]) throws { try ClientAuthServer.write(policy, to: directory) }

    private static func write(_ policy: [String: Any], to directory: URL) throws {
        let temporary = directory.appendingPathComponent("policy.tmp")
        try JSONSerialization.data(withJSONObject: policy).write(to: temporary)
        guard rename(temporary.path, directory.appendingPathComponent("policy.json").path) == 0 else {
            throw TestClientError.malformed("rename")
        }
    }

    /// Every request received, in order: `verdict` ("ok" or why it was refused), `form`,
    /// `headers`, `token`, `peer_cn`.
    func requests() -> [[String: Any]] {
        guard let text = try? String(contentsOf: logURL, encoding: .utf8) else { return [] }
        return text.split(separator: "\n").compactMap { (try? JSONSerialization.jsonObject(with: Data($0.utf8))) as? [String: Any] }
    }

    /// The verdicts, in order.
    func verdicts() -> [String] { requests().map { $0["verdict"] as? String ?? "?" } }

    /// Waits (bounded) until at least `count` requests were received.
    @discardableResult
    func waitForRequests(_ count: Int, timeout: TimeInterval = 10) -> [[String: Any]] {
        let deadline = Date().addingTimeInterval(timeout)
        var seen = requests()
        while seen.count < count && Date() < deadline {
            Thread.sleep(forTimeInterval: 0.05)
            seen = requests()
        }
        return seen
    }
}
