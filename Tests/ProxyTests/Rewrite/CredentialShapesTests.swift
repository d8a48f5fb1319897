import Foundation
import TestSupport
import XCTest
@testable import Proxy

/// Credentials in the shape each API expects, end to end: real SDKs, unchanged and given only a
/// placeholder, and `requests` with a query and a Basic placement, send `https://` URLs through
/// the sidecar as `HTTPS_PROXY` to a test API that accepts only the real key, exactly once, in
/// its own place (Fixtures/key_api.py). A placeholder bound for a host that may not have its
/// secret is refused and never reaches it.
final class CredentialShapesTests: XCTestCase {
    private var directory: URL!
    private var ca: TestCA!
    private var api: FixtureProcess!
    private var plain: FixtureProcess!
    private var proxy: ProxyHarness!

    /// The real keys (test values; never printed by a test).
    private let realKeys = ["openai": "realOpenAIKey0001", "anthropic": "realAnthropicKey0002", "azure": "realAzureKey0003",
                            "maps": "realMapsKey0004", "billing": "realStripeKey0005"]
    private let openAIPlaceholder = "tsp_openAIOperatorGiven000001"
    private let azurePlaceholder = "azure-placeholder-operator-given"

    override func setUpWithError() throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("shapes-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        ca = try TestCA()
        let keys = realKeys.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }
        api = try FixtureProcess(script: "ProxyTests/Fixtures/key_api.py", arguments: [ca.localhostCert, ca.localhostKey, "{dir}/log"] + keys)
        plain = try FixtureProcess(script: "ProxyTests/Fixtures/key_api.py", arguments: ["-", "-", "{dir}/log"] + keys)
        for (name, key) in realKeys { try (key + "\n").write(to: file("\(name).key"), atomically: true, encoding: .utf8) }
        func route(_ host: String, _ credential: String, _ inject: String = "") -> String {
            """
              - host: "\(host):443"
                intercept: true
                upstream: "https://localhost:\(api.port)"
                caFile: \(ca.caCert)
                credential: \(credential)
            \(inject.isEmpty ? "" : "    inject: \(inject)")
            """
        }
        proxy = try ProxyHarness(yaml: """
            listen: "127.0.0.1:0"
            otherHosts: forward
            timeouts: {connect: 5s, responseHeaders: 10s}
            intercept:
              caCertFile: \(caFile)
            credentials:
              anthropic: {type: static, tokenFile: \(file("anthropic.key").path), placeholderFile: \(file("anthropic.placeholder").path)}
              openai: {type: static, tokenFile: \(file("openai.key").path), placeholder: \(openAIPlaceholder)}
              azure: {type: static, tokenFile: \(file("azure.key").path), placeholder: \(azurePlaceholder)}
              maps: {type: static, tokenFile: \(file("maps.key").path)}
              billing: {type: static, tokenFile: \(file("billing.key").path)}
            routes:
            \(route("api.anthropic.test", "anthropic"))
            \(route("api.openai.test", "openai"))
            \(route("azure.openai.test", "azure"))
            \(route("maps.test", "maps", "{query: key}"))
            \(route("billing.test", "billing", "{basic: {username: \"{token}\", password: \"\"}}"))
            """)
    }

    override func tearDown() {
        proxy = nil
        api = nil
        plain = nil
        try? FileManager.default.removeItem(at: directory)
    }

    private var caFile: String { directory.appendingPathComponent("ca.crt").path }
    private func file(_ name: String) -> URL { directory.appendingPathComponent(name) }

    /// The placeholder the sidecar generated and wrote for the anthropic credential.
    private func anthropicPlaceholder() throws -> String {
        try String(contentsOf: file("anthropic.placeholder"), encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// Runs `script` with the SDK environment's python (`python3`, which has `requests` from
    /// Debian, with `sdk: false`), `HTTPS_PROXY` set to the sidecar and its CA the only trust.
    private func client(_ script: String, _ arguments: [String] = [], sdk: Bool = true) throws -> Command.Outcome {
        let proxyURL = "http://127.0.0.1:\(proxy.port)"
        return try Command.run([sdk ? SDKPython.path : "python3", "-c", script] + arguments,
                               environment: ["HTTPS_PROXY": proxyURL, "HTTP_PROXY": proxyURL, "NO_PROXY": "", "no_proxy": "",
                                             "SSL_CERT_FILE": caFile, "REQUESTS_CA_BUNDLE": caFile])
    }

    /// The test API's log lines, once `count` are there or `within` seconds passed.
    private func log(_ fixture: FixtureProcess, expecting count: Int, within seconds: Double = 5) -> [(path: String, ok: Bool, why: String?)] {
        let deadline = Date().addingTimeInterval(seconds)
        var lines: [(String, Bool, String?)] = []
        repeat {
            let text = (try? String(contentsOf: fixture.file("log"), encoding: .utf8)) ?? ""
            lines = text.split(separator: "\n").compactMap { line in
                (try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]).map {
                    ($0["path"] as? String ?? "", $0["ok"] as? Bool ?? false, $0["why"] as? String)
                }
            }
            if lines.count >= count { break }
            Thread.sleep(forTimeInterval: 0.05)
        } while Date() < deadline
        return lines
    }

    func testVendorSDKsGivenOnlyAPlaceholderReachTheAPIWithTheRealKeyOnce() throws {
        let placeholder = try anthropicPlaceholder()
        XCTAssertTrue(placeholder.hasPrefix("tsp_") && placeholder.count == 44, "a generated placeholder")
        let attributes = try FileManager.default.attributesOfItem(atPath: file("anthropic.placeholder").path)
        XCTAssertEqual((attributes[.posixPermissions] as? NSNumber)?.intValue, 0o644)

        let openai = try client("""
            import sys
            from openai import OpenAI
            client = OpenAI(api_key=sys.argv[1], base_url="https://api.openai.test/v1", max_retries=0)
            reply = client.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}])
            print(reply.choices[0].message.content)
            """, [openAIPlaceholder])
        XCTAssertEqual(openai.out, "hello from openai\n", openai.err)
        let anthropic = try client("""
            import sys
            from anthropic import Anthropic
            client = Anthropic(api_key=sys.argv[1], base_url="https://api.anthropic.test", max_retries=0)
            reply = client.messages.create(model="m", max_tokens=5, messages=[{"role": "user", "content": "hi"}])
            print(reply.content[0].text)
            """, [placeholder])
        XCTAssertEqual(anthropic.out, "hello from anthropic\n", anthropic.err)
        let azure = try client("""
            import sys
            from openai import AzureOpenAI
            client = AzureOpenAI(api_key=sys.argv[1], azure_endpoint="https://azure.openai.test", api_version="2024-06-01",
                                 max_retries=0)
            reply = client.chat.completions.create(model="deployment", messages=[{"role": "user", "content": "hi"}])
            print(reply.choices[0].message.content)
            """, [azurePlaceholder])
        XCTAssertEqual(azure.out, "hello from openai\n", azure.err)
        let lines = log(api, expecting: 3)
        XCTAssertEqual(lines.map(\.path), ["/v1/chat/completions", "/v1/messages", "/openai/deployments/deployment/chat/completions"])
        XCTAssertTrue(lines.allSatisfy(\.ok), "\(lines)")
    }

    func testQueryAndBasicPlacementsReplaceWhatTheAppSent() throws {
        let result = try client("""
            import requests
            maps = requests.get("https://maps.test/maps?q=x&key=app-own-key")
            billing = requests.get("https://billing.test/billing", auth=("app-own-key", ""))
            unauthenticated = requests.get("https://billing.test/billing/charges")
            print(maps.status_code, billing.status_code, unauthenticated.status_code)
            """, sdk: false)
        XCTAssertEqual(result.out, "200 200 200\n", result.err)
        let lines = log(api, expecting: 3)
        XCTAssertEqual(lines.map(\.path), ["/maps", "/billing", "/billing/charges"])
        XCTAssertTrue(lines.allSatisfy(\.ok), "\(lines)")
    }

    func testAPlaceholderForAHostThatMayNotHaveItsSecretIsRefusedAndNeverArrives() throws {
        let placeholder = try anthropicPlaceholder()
        let result = try client("""
            import json, sys, requests
            out = []
            for url, headers in [
                ("https://api.openai.test/v1/messages", {"x-api-key": sys.argv[1]}),             # another credential's route
                ("https://maps.test/maps?key=" + sys.argv[1], {}),                               # stripped there, still refused
                ("http://127.0.0.1:%s/v1/messages" % sys.argv[2], {"x-api-key": sys.argv[1]}),  # unrouted, otherHosts: forward
                ("https://api.anthropic.test/v1/messages", {"x-api-key": "tsp_guessedValue"}),   # matches no credential
            ]:
                r = requests.post(url, headers=headers, data=b"{}")
                out.append([r.status_code, r.headers.get("Proxy-Status", ""), r.text])
            print(json.dumps(out))
            """, [placeholder, String(plain.port)], sdk: false)
        let answers = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(result.out.utf8)) as? [[Any]], result.err)
        XCTAssertEqual(answers.count, 4)
        for answer in answers {
            XCTAssertEqual(answer[0] as? Int, 403)
            XCTAssertTrue((answer[1] as? String)?.contains("error=http_request_denied") == true, "\(answer)")
            XCTAssertFalse((answer[2] as? String ?? "").contains(placeholder), "the refusal never repeats the value")
        }
        XCTAssertTrue((answers[0][2] as? String)?.contains("'anthropic'") == true, "\(answers[0])")
        // The refusals came before anything was sent: a short look suffices.
        XCTAssertEqual(log(api, expecting: 1, within: 0.3).count, 0, "nothing reached the API")
        XCTAssertEqual(log(plain, expecting: 1, within: 0.3).count, 0, "nothing reached the unrouted host")
    }

    func testAnHTTP2AppGetsThePlaceholderSwappedToo() throws {
        let placeholder = try anthropicPlaceholder()
        let result = try Curl.run(["-sS", "--http2", "--proxy", "http://127.0.0.1:\(proxy.port)", "--cacert", caFile,
                                   "-H", "x-api-key: \(placeholder)", "-H", "content-type: application/json", "-d", "{}",
                                   "-w", "\\n%{http_version}", "https://api.anthropic.test/v1/messages"])
        XCTAssertEqual(result.status, 0, result.err)
        XCTAssertTrue(result.out.hasSuffix("\n2"), "the app spoke HTTP/2: \(result.out)")
        XCTAssertTrue(result.out.contains("hello from anthropic"), result.out)
        let lines = log(api, expecting: 1)
        XCTAssertEqual(lines.map(\.ok), [true], "\(lines)")
    }
}
