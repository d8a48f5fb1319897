import Foundation
import TestSupport

/// The verifying DPoP authorization and resource server (Fixtures/dpop_server.py) on 127.0.0.1:
/// one process, two listeners.
///
/// - ``port``: the authorization server. `POST /token` authenticates the client, verifies a DPoP
///   proof (signature, `typ`, `alg`, `htm`, `htu`, `iat`, `jti` replay, nonce) and binds the token
///   to its key (`cnf.jkt`, `token_type: DPoP`); with a client certificate and
///   `bind_certificate` to the certificate (`cnf.x5t#S256`).
/// - ``backendPort``: a resource server that verifies, on every request, the proof against the
///   token's `cnf.jkt` (and `ath`, `htm`, `htu`, `iat`, `jti`, nonce), or the TLS client
///   certificate against `cnf.x5t#S256`.
///
/// The policy (`policy.json`) is re-read on every request; the script's docstring lists its keys
/// and the fields of both logs. No log ever holds a raw token or secret.
final class DPoPServer {
    /// Why the fixture could not be used.
    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    /// The launched script; its ``FixtureProcess/directory`` holds the policy and both logs.
    let fixture: FixtureProcess
    /// The authorization server's port.
    var port: Int { fixture.port }
    /// The resource server's port.
    let backendPort: Int
    /// `http(s)://127.0.0.1:<port>/token`.
    let tokenURL: String
    /// `http(s)://127.0.0.1:<backendPort>`.
    let backendURL: String

    /// Starts the fixture with `policy`; with `tls` (certificate and key PEM paths, and the CA
    /// bundle client certificates are verified against) both listeners speak HTTPS.
    init(policy: [String: Any], tls: (cert: String, key: String, clientCA: String?)? = nil) throws {
        var arguments = ["--dir", "{dir}"]
        if let tls {
            arguments += ["--tls-cert", tls.cert, "--tls-key", tls.key]
            if let ca = tls.clientCA { arguments += ["--client-ca", ca] }
        }
        let fixture = try FixtureProcess(script: Backend.fixtures.appendingPathComponent("dpop_server.py"), arguments: arguments) {
            try FixtureProcess.writeJSON(policy, to: "policy.json", in: $0)
        }
        self.fixture = fixture
        let text = (try? String(contentsOf: fixture.file("backend_port"), encoding: .utf8)) ?? ""
        guard let backendPort = Int(text.trimmingCharacters(in: .whitespacesAndNewlines)) else {
            fixture.stop()
            throw Failure(description: "dpop_server.py wrote no backend_port: \(text.debugDescription)")
        }
        self.backendPort = backendPort
        let scheme = tls == nil ? "http" : "https"
        tokenURL = "\(scheme)://127.0.0.1:\(fixture.port)/token"
        backendURL = "\(scheme)://127.0.0.1:\(backendPort)"
    }

    /// Replaces the policy atomically; the next request reads it.
    func setPolicy(_ policy: [String: Any]) throws { try fixture.writeJSON(policy, to: "policy.json") }

    /// Every token request, in order (`status`, `verdict`, `error`, `jkt`, `nonce_sent`,
    /// `token_type`, `cnf`, `peer_cert_x5t`, ...).
    func tokenRequests() -> [[String: Any]] { fixture.jsonLines("as_requests.jsonl") }

    /// Every resource request, in order (`status`, `verdict`, `error`, `scheme`, `bound`,
    /// `token_jkt`, `jkt`, `proof_jti`, `proof_htu`, `nonce_sent`, `body_length`, ...).
    func resourceRequests() -> [[String: Any]] { fixture.jsonLines("rs_requests.jsonl") }

    /// Waits (bounded) until at least `count` resource requests were logged; returns them all.
    @discardableResult
    func waitForResourceRequests(_ count: Int, timeout: TimeInterval = 10) -> [[String: Any]] {
        let deadline = Date().addingTimeInterval(timeout)
        var seen = resourceRequests()
        while seen.count < count && Date() < deadline {
            Thread.sleep(forTimeInterval: 0.05)
            seen = resourceRequests()
        }
        return seen
    }

    /// Sends `GET /during/<n>` for `host` on `client` every 50 ms until the authorization server
    /// has issued `count` tokens (at most `seconds`): the requests a rotation must not fail.
    /// Returns the responses, in order.
    func keepRequesting(_ client: RawClient, host: String, untilTokens count: Int,
                        within seconds: TimeInterval = 8) throws -> [TestResponse] {
        let deadline = Date().addingTimeInterval(seconds)
        var responses: [TestResponse] = []
        while tokenRequests().count < count && Date() < deadline {
            client.send("GET /during/\(responses.count) HTTP/1.1\r\nHost: \(host)\r\n\r\n")
            responses.append(try client.readResponse())
            Thread.sleep(forTimeInterval: 0.05)
        }
        return responses
    }
}
