import Config
@_spi(Testing) import EventLoop
import Foundation
import Logging
import TestSupport
import TokenManager
import XCTest
@testable import Proxy

/// One worker's proxy without sockets: a ``WorkerContext`` whose client and backend streams are
/// ``MemoryStream``s the test drives. Nothing runs the loop: every event happens inside a
/// test's call, and timers expire when the test says (``Timer/expire()``), so the session's
/// edges run in milliseconds and without sleeping.
final class SessionHarness {
    let loop: EventLoop
    let context: WorkerContext
    /// Every backend stream the pool opened, in order.
    private(set) var backends: [MemoryStream] = []
    /// The upstream target each backend stream was opened for.
    private(set) var targets: [UpstreamTarget] = []
    let spoolDirectory: String?
    /// Where the intercepting CA's certificate was written (`intercepting` only).
    let caCertFile: String?

    private static let interceptingRoute = """
          - host: "secure.test:443"
            intercept: true
            upstream: "https://backend.test:8443"
            credential: api
        """

    /// One route `api.test` → `http://backend.test:8080` with `credential` (a static token
    /// `tok-1` unless another is given); `top`: extra top-level YAML lines; `route`: extra keys
    /// of the route (flow style, e.g. `upgrades: [foo]`); `bufferBytes`: the process's ``BufferBudget``;
    /// `intercepting`: a second route, `secure.test:443` → `https://backend.test:8443` with the
    /// same credential, intercepts CONNECTs (a CA generated for it, its certificate in a
    /// temporary directory); `routes`: further route entries (YAML list items, each line indented
    /// by two spaces, e.g. `  - host: "*.svc.test"`); `accessLog`: where the worker writes its
    /// access records (e.g. ``AccessRecords``).
    /// `credentialYAML`: the `api` credential's flow mapping (an `aws` one for a `sigv4` route;
    /// the token itself is `credential`'s).
    init(credential: (any Credential)? = nil, credentialYAML: String = "{type: static, token: \"tok-1\"}", top: String = "",
         route: [String] = [], spoolBytes: Int = 0,
         bufferBytes: Int = BufferBudget.defaultLimit, intercepting: Bool = false, routes: String = "",
         accessLog: (any AccessLogWriter)? = nil) throws {
        loop = try EventLoop()
        let spoolDirectory = spoolBytes > 0 ? NSTemporaryDirectory() + "session-spool-\(UUID().uuidString)" : nil
        if let spoolDirectory { try FileManager.default.createDirectory(atPath: spoolDirectory, withIntermediateDirectories: true) }
        self.spoolDirectory = spoolDirectory
        caCertFile = intercepting ? NSTemporaryDirectory() + "session-ca-\(UUID().uuidString).pem" : nil
        let config = try ConfigLoader.parse(yaml: """
            listen: "127.0.0.1:0"
            \(top)
            \(caCertFile.map { "intercept: {caCertFile: \"\($0)\"}" } ?? "")
            credentials:
              api: \(credentialYAML)
            routes:
              - host: "api.test"
                upstream: "http://backend.test:8080"
                credential: api
            \(route.map { "    " + $0 }.joined(separator: "\n"))
            \(intercepting ? Self.interceptingRoute : "")
            \(routes)
            """, file: "session.yaml", environment: [:])
        let credentials = CredentialSet([credential ?? FixedCredential()])
        var logger = Logger(label: "session-test")
        logger.logLevel = .critical
        context = WorkerContext(loop: loop, router: try Router(config: config, credentials: credentials), config: config,
                                clientShare: 1000, logger: logger, accessLogWriter: accessLog,
                                spoolBudget: SpoolBudget(directory: spoolDirectory ?? "/nonexistent", limit: spoolBytes),
                                bufferBudget: BufferBudget(limit: bufferBytes))
        if let intercept = config.intercept {
            context.interception = try Interception(config: intercept, routes: config.routes)
        }
        context.pool.connector = { [unowned self] target in
            let stream = MemoryStream(loop: loop, connected: false)
            backends.append(stream)
            targets.append(target)
            return stream
        }
    }

    /// A ``LocalServer``'s worker: every request goes to `responder`, none upstream.
    init(limits: LocalServerLimits = LocalServerLimits(), responder: @escaping LocalServer.Responder) throws {
        loop = try EventLoop()
        spoolDirectory = nil
        caCertFile = nil
        context = WorkerContext(loop: loop, local: LocalService(responder: responder, limits: limits))
    }

    deinit {
        context.closeAll()
        if let spoolDirectory { try? FileManager.default.removeItem(atPath: spoolDirectory) }
        if let caCertFile { try? FileManager.default.removeItem(atPath: caCertFile) }
    }

    /// A client connection accepted now.
    func connectClient() -> MemoryStream {
        let client = MemoryStream(loop: loop)
        context.adopt(client)
        return client
    }

    /// The client session of `client` (its timers are what a test expires).
    func session(of client: MemoryStream) -> ClientSession? { client.delegate as? ClientSession }

    /// The last backend stream opened; connected if it was not.
    func connectedBackend() -> MemoryStream? {
        guard let backend = backends.last else { return nil }
        backend.connect()
        return backend
    }

    /// `request` sent by `client`: what the backend received (exactly one request), answered
    /// with a 200 that reaches the client.
    func forward(_ request: String, from client: MemoryStream, file: StaticString = #filePath, line: UInt = #line) throws -> MemoryRequest {
        client.clearDelivered()
        client.receive(request)
        let backend = try XCTUnwrap(connectedBackend(), file: file, line: line)
        let requests = MemoryMessages.requests(backend.peerReads())
        XCTAssertEqual(requests.count, 1, request, file: file, line: line)
        backend.receive("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
        XCTAssertEqual(MemoryMessages.response(client.readAll()).status, 200, request, file: file, line: line)
        return try XCTUnwrap(requests.first, file: file, line: line)
    }

    /// The pool's connections by state (`connecting`, `active`, `idle`).
    func pooled(_ state: String) -> Int {
        context.pool.gauges().filter { $0.key.state == state }.values.reduce(0, +)
    }
}

/// A credential whose token never changes (like a static one).
final class FixedCredential: Credential, @unchecked Sendable {
    let name = "api"
    let tokenWait: Duration = .seconds(5)
    let refreshable = false
    let token: AccessToken
    /// A credential whose token is `value` (`tok-1`; AWS keys as ``SigV4Credentials/tokenValue``).
    init(value: String = "tok-1") { token = AccessToken(value: value) }
    func currentToken() -> AccessToken? { token }
    func waitForToken(on loop: EventLoop, timeout: Duration, _ completion: @escaping (AccessToken?) -> Void) { completion(token) }
    func rejected(_ token: AccessToken, on loop: EventLoop, timeout: Duration, _ completion: ((AccessToken?) -> Void)?) {
        completion?(nil)
    }
    func accepted(_ token: AccessToken) {}
}

/// A fetched credential in miniature: a rejected current token is replaced by the next one
/// (`tok-1`, `tok-2`, …), at once. Confined to the test's thread like the session.
final class RotatingCredential: Credential, @unchecked Sendable {
    let name = "api"
    let tokenWait: Duration = .seconds(5)
    let refreshable = true
    private(set) var token = AccessToken(value: "tok-1")
    private(set) var rejections = 0
    func currentToken() -> AccessToken? { token }
    func waitForToken(on loop: EventLoop, timeout: Duration, _ completion: @escaping (AccessToken?) -> Void) { completion(token) }
    func rejected(_ rejected: AccessToken, on loop: EventLoop, timeout: Duration, _ completion: ((AccessToken?) -> Void)?) {
        rejections += 1
        if rejected.value == token.value { token = AccessToken(value: "tok-\(rejections + 1)") }
        completion?(token.value == rejected.value ? nil : token)
    }
    /// Tokens that earned a 2xx, in order.
    private(set) var acceptedTokens: [String] = []
    func accepted(_ token: AccessToken) { acceptedTokens.append(token.value) }
}

/// A fetched credential whose token server never answers: no token now, and every wait ends
/// without one (as when `tokenWait` passes). Counts the waits. Confined to the test's thread.
final class UnavailableCredential: Credential, @unchecked Sendable {
    let name = "api"
    let tokenWait: Duration = .seconds(2)
    let refreshable = true
    /// How many times a request waited for a token.
    private(set) var waits = 0
    func currentToken() -> AccessToken? { nil }
    func waitForToken(on loop: EventLoop, timeout: Duration, _ completion: @escaping (AccessToken?) -> Void) {
        waits += 1
        completion(nil)
    }
    func rejected(_ token: AccessToken, on loop: EventLoop, timeout: Duration, _ completion: ((AccessToken?) -> Void)?) {
        completion?(nil)
    }
    func accepted(_ token: AccessToken) {}
}
