import EventLoop
import Foundation
import HTTP1
import TestSupport
import TokenManager
import XCTest

/// `auth: assertion_file` as a managed credential runs it: a JWT issued by someone else (a
/// Kubernetes projected service-account token) read from a real `..data` volume before every
/// fetch and sent verbatim as `client_assertion` (RFC 7523 §2.2). The sidecar signs nothing,
/// so a fake transport records what a token server would receive; a manual clock fires the
/// refresh and retry timers when the test says so.
///
/// The reader's own checks (trimming, not a JWT, each message) are in ``ClientAssertionTests``;
/// the config → `CredentialFactory` → real token server path, in TokenSidecarTests'
/// `ClientAuthCommandTests` (the `token` command).
final class AssertionFileTests: XCTestCase {
    private var harness: LoopHarness!
    private var clock: ManualClock!
    private var transport: RecordingTransport!
    private var credential: ManagedCredential?

    /// The wall clock the credential and the assertion checks see (seconds since 1970).
    private let wallClock = 1_800_000_000.0

    override func setUpWithError() throws {
        harness = try LoopHarness()
        clock = ManualClock(wallClockSeconds: wallClock)
        transport = RecordingTransport(loop: harness.loop)
    }

    override func tearDown() {
        credential?.stop()
        harness?.stop()
    }

    /// The credential `auth: assertion_file` makes for `path` (what `CredentialFactory` builds):
    /// every fetch reads the file and sends what it holds as the client assertion.
    private func start(file path: String) -> ManagedCredential {
        let file = AssertionFile(path: path)
        let now = wallClock
        let source = TokenRequestSource { () throws(TokenFetchError) in
            let assertion = try file.current(now: now)
            return try TokenRequestSource.building { () throws(TokenEndpointError) in
                try TokenEndpointRequest.oauth2(tokenURL: "https://sts.example/oauth/token", clientId: "checkout",
                                                proof: .assertion(assertion))
            }
        }
        let credential = ManagedCredential(name: "checkout", source: source, transport: transport, loop: harness.loop,
                                           logger: LogRecorder().logger, clock: clock, random: SplitMix64(seed: 7))
        self.credential = credential
        credential.start()
        return credential
    }

    /// A service-account token as the kubelet writes it (signed by the cluster, which only the
    /// token server checks): `iat` tells renewals apart.
    private func serviceAccountToken(issuedAt: Double, expiresIn: Double) -> String {
        func part(_ object: [String: Any]) -> String {
            let data = try! JSONSerialization.data(withJSONObject: object, options: .sortedKeys)
            return data.base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
                .replacingOccurrences(of: "=", with: "")
        }
        return part(["alg": "RS256", "kid": "k8s-signing-key"]) + "." + part([
            "iss": "https://kubernetes.default.svc", "sub": "system:serviceaccount:payments:checkout", "aud": ["sts.example"],
            "iat": Int(issuedAt), "nbf": Int(issuedAt), "exp": Int(issuedAt + expiresIn),
        ]) + ".c2lnbmVkLWJ5LXRoZS1jbHVzdGVy"
    }

    /// The credential's status once the fetch under way has finished (it then arms its next timer).
    private func statusAfterTheFetch(_ credential: ManagedCredential, file: StaticString = #filePath,
                                     line: UInt = #line) throws -> TokenStatus {
        XCTAssertTrue(clock.waitUntilArmed(), "the fetch finished", file: file, line: line)
        return try XCTUnwrap(onLoop(harness.loop) { credential.status }, file: file, line: line)
    }

    func testTheFilesTokenIsSentVerbatimAndReReadAfterTheKubeletSwapsTheVolume() throws {
        let volume = try ProjectedVolume()
        let first = serviceAccountToken(issuedAt: wallClock - 600, expiresIn: 3600)
        try volume.publish(text: ["token": first + "\n"])
        let credential = start(file: volume.path("token"))
        XCTAssertEqual(try statusAfterTheFetch(credential).phase, .valid)
        XCTAssertEqual(credential.currentToken()?.value, "tok-1")
        XCTAssertEqual(transport.forms, [[
            ["grant_type", "client_credentials"],
            ["client_id", "checkout"],
            ["client_assertion_type", "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"],
            ["client_assertion", first],
        ]], "one request: the file's JWT verbatim, without its trailing newline")
        XCTAssertNil(transport.requests.first?.fields.first("Authorization"), "the assertion is the only proof")

        // The kubelet renews the token (a new timestamped directory, `..data` renamed over the
        // old link); the refresh sends the new one.
        let renewed = serviceAccountToken(issuedAt: wallClock, expiresIn: 3600)
        try volume.publish(text: ["token": renewed])
        clock.fire()
        XCTAssertEqual(try statusAfterTheFetch(credential).phase, .valid)
        XCTAssertEqual(transport.forms.map { $0.last }, [["client_assertion", first], ["client_assertion", renewed]])
        XCTAssertEqual(credential.currentToken()?.value, "tok-2")
    }

    func testAnExpiredAssertionIsNotSentTheErrorNamesTheFileAndARenewedOneIsUsedOnTheRetry() throws {
        let volume = try ProjectedVolume()
        let path = volume.path("token")
        try volume.publish(text: ["token": serviceAccountToken(issuedAt: wallClock - 3630, expiresIn: 3600)])
        let credential = start(file: path)
        let failed = try statusAfterTheFetch(credential)
        XCTAssertEqual(failed.phase, .failing)
        XCTAssertEqual(failed.lastError?.hasPrefix("cannot authenticate to the token endpoint: assertionFile \(path): expired 30 s ago"),
                       true, failed.lastError ?? "no error")
        XCTAssertEqual(failed.counts.failed, ["client_authentication": 1])
        XCTAssertEqual(transport.requests.count, 0, "an assertion the server must refuse is not sent")
        XCTAssertNil(credential.currentToken())

        // Renewed: the retry after the backoff succeeds, with no restart.
        let renewed = serviceAccountToken(issuedAt: wallClock, expiresIn: 3600)
        try volume.publish(text: ["token": renewed])
        clock.fire()
        let recovered = try statusAfterTheFetch(credential)
        XCTAssertEqual(recovered.phase, .valid)
        XCTAssertNil(recovered.lastError)
        XCTAssertEqual(transport.forms.map { $0.last }, [["client_assertion", renewed]])
        XCTAssertEqual(credential.currentToken()?.value, "tok-1")
    }

    func testAMissingOrEmptyFileFailsTheFetchNamingTheFile() throws {
        let volume = try ProjectedVolume()
        let path = volume.path("token")
        let credential = start(file: path)
        let missing = try statusAfterTheFetch(credential)
        XCTAssertEqual(missing.lastError, "cannot authenticate to the token endpoint: assertionFile \(path): does not exist")

        // The kubelet has written the volume, but an empty token: the retry says so.
        try volume.publish(text: ["token": "\n"])
        clock.fire()
        let empty = try statusAfterTheFetch(credential)
        XCTAssertEqual(empty.lastError, "cannot authenticate to the token endpoint: assertionFile \(path): is empty")
        XCTAssertEqual(empty.phase, .failing)
        XCTAssertEqual(empty.counts.failed, ["client_authentication": 2])
        XCTAssertEqual(transport.requests.count, 0, "nothing is sent")
        XCTAssertNil(credential.currentToken())
    }

    func testAnAssertionTheTokenServerRefusesFailsTheFetchWithTheServersError() throws {
        // Signed by a key the token server does not trust: only the server can tell.
        transport.answer = TokenHTTPResponse(status: 400, body: Array(
            #"{"error":"invalid_client","error_description":"assertion not signed by a trusted issuer"}"#.utf8))
        let volume = try ProjectedVolume()
        let untrusted = serviceAccountToken(issuedAt: wallClock, expiresIn: 600)
        try volume.publish(text: ["token": untrusted])
        let credential = start(file: volume.path("token"))
        let refused = try statusAfterTheFetch(credential)
        XCTAssertEqual(transport.forms.map { $0.last }, [["client_assertion", untrusted]], "sent: the sidecar does not judge it")
        XCTAssertEqual(refused.lastError, "token endpoint answered HTTP 400 invalid_client: assertion not signed by a trusted issuer")
        XCTAssertEqual(refused.counts.failed, ["credentials_rejected": 1])
        XCTAssertEqual(refused.phase, .failing)
        XCTAssertNil(credential.currentToken(), "no token to inject: requests get 503")
    }
}

/// Answers every token request with ``answer`` (by default a one-hour bearer token `tok-N`),
/// on the loop and never inside `send`, and records what was sent.
private final class RecordingTransport: TokenTransport, Sendable {
    private let loop: EventLoop
    private let sent = Locked<[TokenEndpointRequest]>([])
    private let fixedAnswer = Locked<TokenHTTPResponse?>(nil)

    init(loop: EventLoop) { self.loop = loop }

    /// The response to every request (nil: `tok-1`, `tok-2`, … for an hour).
    var answer: TokenHTTPResponse? {
        get { fixedAnswer.value }
        set { fixedAnswer.update { $0 = newValue } }
    }

    /// The requests sent, in order.
    var requests: [TokenEndpointRequest] { sent.value }

    /// Each request's form as decoded `[name, value]` pairs, in order.
    var forms: [[[String]]] {
        requests.map { request in
            String(decoding: request.body, as: UTF8.self).split(separator: "&").map { pair in
                pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false).map {
                    $0.replacingOccurrences(of: "+", with: " ").removingPercentEncoding ?? "?"
                }
            }
        }
    }

    func send(_ request: TokenEndpointRequest, completion: @escaping (Result<TokenHTTPResponse, TokenTransportError>) -> Void) {
        let count = sent.update { $0.append(request); return $0.count }
        let response = answer ?? TokenHTTPResponse(status: 200, body: Array(
            #"{"access_token":"tok-\#(count)","token_type":"Bearer","expires_in":3600}"#.utf8))
        let completion = LoopObject(completion)
        loop.execute { completion.value(.success(response)) }
    }
}

/// Time that moves only when the test fires the timer a credential armed (it arms one at a
/// time: the refresh after a token, the retry after a failure). Arming it is the sign that the
/// fetch before it has finished.
private final class ManualClock: TokenClock, @unchecked Sendable {
    /// A timer; cancelled and run on its loop only.
    private final class Task: TokenScheduledTask {
        var isCancelled = false
        func cancel() { isCancelled = true }
    }

    private struct Armed {
        let task: Task
        let at: ContinuousClock.Instant
        let loop: EventLoop
        let action: () -> Void
    }

    let wallClockSeconds: Double
    // Guarded by `lock`.
    private let lock = NSLock()
    private var instant = ContinuousClock.now
    private var armed: Armed?
    private let armedSignal = DispatchSemaphore(value: 0)

    init(wallClockSeconds: Double) { self.wallClockSeconds = wallClockSeconds }

    var now: ContinuousClock.Instant { lock.withLock { instant } }

    func schedule(on loop: EventLoop, after delay: Duration, _ action: @escaping () -> Void) -> any TokenScheduledTask {
        let task = Task()
        lock.withLock { armed = Armed(task: task, at: instant + max(delay, .zero), loop: loop, action: action) }
        armedSignal.signal()
        return task
    }

    /// Waits until the credential arms its next timer (a guard against a hang, not a time limit
    /// on the behaviour).
    func waitUntilArmed() -> Bool { armedSignal.wait(timeout: .now() + 30) == .success }

    /// Moves to the armed timer's time and runs it on its loop (unless the credential cancelled it).
    func fire(file: StaticString = #filePath, line: UInt = #line) {
        let timer = lock.withLock { () -> Armed? in
            defer { armed = nil }
            if let armed { instant = max(instant, armed.at) }
            return armed
        }
        guard let timer else { return XCTFail("no timer armed", file: file, line: line) }
        let run = LoopObject(timer)
        timer.loop.execute { if !run.value.task.isCancelled { run.value.action() } }
    }
}
