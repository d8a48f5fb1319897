import Foundation
import TestSupport

/// The verifying authorization server (Fixtures/client_auth_server.py) on 127.0.0.1: it checks
/// client authentication the way a real one does (signatures, claims, jti replay, the TLS
/// client certificate, the IMFCert JWS) and answers 400 `invalid_client` to anything else. The
/// policy is re-read on every request, so a test can change the trusted key mid-run.
final class ClientAuthServer {
    private let fixture: FixtureProcess
    var port: Int { fixture.port }
    var directory: URL { fixture.directory }

    init(policy: [String: Any], tlsCert: String? = nil, tlsKey: String? = nil, clientCA: String? = nil) throws {
        var arguments = ["--log", "{dir}/requests.jsonl", "--policy", "{dir}/policy.json"]
        if let tlsCert, let tlsKey { arguments += ["--tls-cert", tlsCert, "--tls-key", tlsKey] }
        if let clientCA { arguments += ["--client-ca", clientCA] }
        fixture = try FixtureProcess(script: Backend.fixtures.appendingPathComponent("client_auth_server.py"),
                                     arguments: arguments) {
            try FixtureProcess.writeJSON(policy, to: "policy.json", in: $0)
        }
    }

    /// Replaces the policy atomically (write, then rename).
    func setPolicy(_ policy: [String: Any]) throws { try fixture.writeJSON(policy, to: "policy.json") }

    /// Every request received, in order: `verdict` ("ok" or why it was refused), `form`,
    /// `headers`, `token`, `peer_cn`.
    func requests() -> [[String: Any]] { fixture.jsonLines("requests.jsonl") }

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
