import Foundation
import TestSupport

/// The verifying Security Token Service and its recording backend (Fixtures/sts_server.py) on
/// 127.0.0.1, for token-exchange tests: one process, two listeners.
///
/// - ``port``: the STS. `POST /token` authenticates the client (`client_secret_basic`,
///   `client_secret_post` or `none`, per policy) and answers `client_credentials` and RFC 8693
///   token exchange, verifying the subject (and actor) token like a real STS: signature (HS256
///   with the policy's `issuer_secret`, or RS256 with a key the fixture generated), `iss`, `exp`,
///   `nbf`. `POST /mint` (see ``mint(subject:ttl:kind:audience:issuer:notBefore:forged:)``) signs
///   subject and actor tokens it will accept.
/// - ``backendPort``: a protected backend that accepts only unexpired tokens this STS issued
///   and answers what it knows about them (`sub`, `aud`, `scope`, `act`).
///
/// The policy is re-read on every request (``setPolicy(_:)`` replaces it atomically). Keys
/// (all optional): `client_auth`, `client_id`, `client_secret`, `issuer`, `issuer_secret`,
/// `signing_alg`, `actor_issuer`, `actor_issuer_secret`, `accepted_token_types`,
/// `require_actor`, `allowed_audiences`, `allowed_resources`, `subject_audience`, `expires_in`,
/// `cap_to_subject`, `delay_ms`, `refuse_subjects`, `fail_status`, `backend_reject_all`; the
/// script's docstring says what each does. Neither log ever holds a raw token or secret, only
/// the first 16 hex digits of its SHA-256.
final class STSServer {
    /// The RFC 8693 grant type.
    static let grantType = "urn:ietf:params:oauth:grant-type:token-exchange"
    /// The RFC 8693 token type of an access token (the type of every token the STS issues).
    static let accessTokenType = "urn:ietf:params:oauth:token-type:access_token"
    /// The RFC 8693 token type of a JWT.
    static let jwtTokenType = "urn:ietf:params:oauth:token-type:jwt"

    /// Why the fixture could not be used.
    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    /// The launched script; its ``FixtureProcess/directory`` holds the policy and both logs.
    let fixture: FixtureProcess
    /// The STS listener (`POST /token`, `POST /mint`).
    var port: Int { fixture.port }
    /// The backend listener (any method, any path; Bearer tokens the STS issued).
    let backendPort: Int
    /// The fixture's directory: `policy.json`, `token_requests.jsonl`, `backend_requests.jsonl`,
    /// `backend_port`, `issuer_public.pem`.
    var directory: URL { fixture.directory }
    /// The PEM public key of the fixture's RS256 issuer key (used when `signing_alg` is RS256).
    var issuerPublicKey: URL { fixture.file("issuer_public.pem") }
    /// `http://127.0.0.1:<port>/token`.
    var tokenURL: String { "http://127.0.0.1:\(port)/token" }
    /// `http://127.0.0.1:<backendPort>`.
    var backendURL: String { "http://127.0.0.1:\(backendPort)" }

    /// Starts the fixture with `policy` as its first `policy.json`.
    init(policy: [String: Any] = [:]) throws {
        let fixture = try FixtureProcess(script: Backend.fixtures.appendingPathComponent("sts_server.py"),
                                         arguments: ["--dir", "{dir}"]) {
            try FixtureProcess.writeJSON(policy, to: "policy.json", in: $0)
        }
        self.fixture = fixture
        // Written (atomically) before the script announces its STS port.
        let text = (try? String(contentsOf: fixture.file("backend_port"), encoding: .utf8)) ?? ""
        guard let backendPort = Int(text.trimmingCharacters(in: .whitespacesAndNewlines)) else {
            fixture.stop()
            throw Failure(description: "sts_server.py wrote no backend_port: \(text.debugDescription)")
        }
        self.backendPort = backendPort
    }

    /// Replaces the policy atomically (write, then rename); the next request reads it.
    func setPolicy(_ policy: [String: Any]) throws { try fixture.writeJSON(policy, to: "policy.json") }

    /// A token signed the way the STS verifies subject (`kind` "subject") or actor (`kind`
    /// "actor") tokens under the current policy, with `sub` = `subject`, `iat` = now and `exp` =
    /// now + `ttl` (negative for an expired token). `audience`, `issuer` (default: the policy's)
    /// and `notBefore` (seconds from now) set `aud`, `iss` and `nbf`; `forged` signs with a key
    /// the STS does not trust (a bad signature).
    func mint(subject: String, ttl: Int, kind: String = "subject", audience: String? = nil,
              issuer: String? = nil, notBefore: Int? = nil, forged: Bool = false) throws -> String {
        var fields = ["sub=\(subject)", "ttl=\(ttl)", "kind=\(kind)"]
        if let audience { fields.append("aud=\(audience)") }
        if let issuer { fields.append("iss=\(issuer)") }
        if let notBefore { fields.append("nbf=\(notBefore)") }
        if forged { fields.append("forge=1") }
        let arguments = fields.flatMap { ["--data-urlencode", $0] } + ["-f", "http://127.0.0.1:\(port)/mint"]
        let result = try Curl.run(arguments)
        let token = result.out.trimmingCharacters(in: .whitespacesAndNewlines)
        guard result.status == 0, token.split(separator: ".", omittingEmptySubsequences: false).count == 3 else {
            throw Failure(description: "mint failed (curl \(result.status)): \(result.err) \(result.out)")
        }
        return token
    }

    /// Every `POST /token` request, in order: `time`, `grant_type`, `client_id`, `client_auth`,
    /// `status`, `verdict` ("ok" or the OAuth error code), `reason`, `form` (secrets and tokens
    /// replaced by their SHA-256 prefix), `token_sha256` (of the issued token), `sub`, `act`,
    /// `aud`, `scope`, `resource`, `requested_token_type`, `subject_token_type`,
    /// `subject_jti`, `subject_sha256`, `expires_in`.
    func tokenRequests() -> [[String: Any]] { fixture.jsonLines("token_requests.jsonl") }

    /// Every backend request, in order: `time`, `method`, `path`, `status`, `known`, `expired`,
    /// `token_sha256`, `sub`, `act`, `aud`, `scope`, `authorization_scheme`, `header_names`
    /// (every header name, as received), `sidecar_headers` ([[name, value]] of every header
    /// whose name starts with `token-sidecar-`, any case), `body_length`, `chunked`.
    func backendRequests() -> [[String: Any]] { fixture.jsonLines("backend_requests.jsonl") }

    /// The verdicts of the token requests, in order.
    func tokenVerdicts() -> [String] { tokenRequests().map { $0["verdict"] as? String ?? "?" } }

    /// Waits (bounded) until at least `count` token requests were logged; returns them all.
    @discardableResult
    func waitForTokenRequests(_ count: Int, timeout: TimeInterval = 10) -> [[String: Any]] {
        wait(count, timeout) { self.tokenRequests() }
    }

    /// Waits (bounded) until at least `count` backend requests were logged; returns them all.
    @discardableResult
    func waitForBackendRequests(_ count: Int, timeout: TimeInterval = 10) -> [[String: Any]] {
        wait(count, timeout) { self.backendRequests() }
    }

    private func wait(_ count: Int, _ timeout: TimeInterval, _ read: () -> [[String: Any]]) -> [[String: Any]] {
        let deadline = Date().addingTimeInterval(timeout)
        var seen = read()
        while seen.count < count && Date() < deadline {
            Thread.sleep(forTimeInterval: 0.05)
            seen = read()
        }
        return seen
    }
}
