import Config
import Foundation
import XCTest

/// `sharedCache:` — the Redis shared by replicas: URL, TLS, AUTH files, the sealing key, prefix, timeout.
final class ConfigDecoderSharedCacheTests: XCTestCase {
    private var keyFile = ""
    private var passwordFile = ""

    override func setUpWithError() throws {
        keyFile = try writeTemporaryFile(self, "key", "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=\n")
        passwordFile = try writeTemporaryFile(self, "password", "SENTINEL-PASSWORD\n")
    }

    func testAbsentMeansPerProcess() {
        XCTAssertNil(parseOK("routes: []")?.sharedCache)
        XCTAssertNil(parseOK("sharedCache: ~")?.sharedCache)
    }

    func testMinimalWithDefaults() throws {
        let cache = try XCTUnwrap(parseOK("sharedCache: {url: 'redis://redis.tokens.svc', encryptionKeyFile: \(keyFile)}")?.sharedCache)
        XCTAssertEqual(cache, SharedCacheConfig(url: RedisURL(host: "redis.tokens.svc"), encryptionKeyFile: keyFile))
        XCTAssertEqual(cache.keyPrefix, "token-sidecar:")
        XCTAssertEqual(cache.timeout, .milliseconds(250))
        XCTAssertEqual(cache.url.description, "redis://redis.tokens.svc:6379/0")
    }

    func testEverything() throws {
        let ca = try writeTemporaryFile(self, "ca.pem", FakePEM.certificate)
        let user = try writeTemporaryFile(self, "user", "sidecar")
        let yaml = """
        sharedCache:
          url: rediss://[::1]:6380/3
          caFile: \(ca)
          passwordFile: \(passwordFile)
          usernameFile: \(user)
          encryptionKeyFile: \(keyFile)
          keyPrefix: "fleet-a:"
          timeout: 100ms
        """
        let cache = try XCTUnwrap(parseOK(yaml)?.sharedCache)
        XCTAssertEqual(cache.url, RedisURL(isTLS: true, host: "::1", port: 6380, database: 3))
        XCTAssertEqual(cache.tls.caFile, ca)
        XCTAssertEqual(cache.passwordFile, passwordFile)
        XCTAssertEqual(cache.usernameFile, user)
        XCTAssertEqual(cache.keyPrefix, "fleet-a:")
        XCTAssertEqual(cache.timeout, .milliseconds(100))
    }

    func testRawKeyOf32Bytes() throws {
        let path = try makeTemporaryDirectory(self).appendingPathComponent("raw").path
        let raw = Data((0..<32).map { UInt8(truncatingIfNeeded: $0 * 7 + 200) })
        XCTAssertTrue(FileManager.default.createFile(atPath: path, contents: raw))
        XCTAssertNotNil(parseOK("sharedCache: {url: redis://r, encryptionKeyFile: \(path)}")?.sharedCache)
        XCTAssertEqual(try EncryptionKeyFile.read(path), [UInt8](raw))
        XCTAssertEqual(try EncryptionKeyFile.read(keyFile), Array("0123456789abcdef0123456789abcdef".utf8))
    }

    func testProblems() throws {
        let short = try writeTemporaryFile(self, "short", "c2hvcnQ=")
        XCTAssertEqual(problemLines("sharedCache: {encryptionKeyFile: \(keyFile)}"), [
            "c.yaml: sharedCache.url: required key is missing (e.g. redis://redis.tokens.svc:6379/0)",
        ])
        XCTAssertEqual(problemLines("sharedCache: {url: redis://r}"), [
            "c.yaml: sharedCache.encryptionKeyFile: required key is missing: a file with a 32-byte key (raw or base64) that seals cached tokens",
        ])
        XCTAssertEqual(problemLines("sharedCache: {url: 'http://r', encryptionKeyFile: \(keyFile)}"), [
            "c.yaml: sharedCache.url: expected redis://host:port/db or rediss://host:port/db, got 'http://r'",
        ])
        XCTAssertEqual(problemLines("sharedCache: {url: 'redis://u:SENTINEL@r', encryptionKeyFile: \(keyFile)}"), [
            "c.yaml: sharedCache.url: must not contain credentials; use passwordFile (and usernameFile)",
        ])
        XCTAssertEqual(problemLines("sharedCache: {url: 'redis://r/x', encryptionKeyFile: \(keyFile)}"), [
            "c.yaml: sharedCache.url: the database after the host must be a number such as /0, got '/x'",
        ])
        XCTAssertEqual(problemLines("sharedCache: {url: redis://r, encryptionKeyFile: \(short)}"), [
            "c.yaml: sharedCache.encryptionKeyFile: \(short) must hold a 32-byte key, raw or base64 (e.g. openssl rand -base64 32); got 8 bytes that are neither",
        ])
        XCTAssertEqual(problemLines("sharedCache: {url: redis://r, encryptionKeyFile: /dev/zero}"), [
            "c.yaml: sharedCache.encryptionKeyFile: /dev/zero must hold a 32-byte key, raw or base64 (e.g. openssl rand -base64 32); got more than 256 bytes that are neither",
        ], "a device does not hang the loader")
        XCTAssertEqual(problemLines("sharedCache: {url: redis://r, encryptionKeyFile: /nonexistent/key}"), [
            "c.yaml: sharedCache.encryptionKeyFile: cannot read /nonexistent/key: no such file",
        ])
        XCTAssertEqual(problemLines("sharedCache: {url: redis://r, encryptionKeyFile: \(keyFile), timeout: 0s}"), [
            "c.yaml: sharedCache.timeout: must be greater than 0 and at most 10s",
        ])
        XCTAssertEqual(problemLines("sharedCache: {url: redis://r, encryptionKeyFile: \(keyFile), usernameFile: \(passwordFile)}"), [
            "c.yaml: sharedCache.usernameFile: usernameFile needs passwordFile as well (AUTH user password)",
        ])
        XCTAssertEqual(problemLines("sharedCache: {url: redis://r, encryptionKeyFile: \(keyFile), caFile: \(keyFile)}").first?.hasPrefix("c.yaml: sharedCache.caFile: "), true)
        XCTAssertEqual(problemLines("sharedCache: {url: redis://r, encryptionKeyFile: \(keyFile), passwordFile: /nonexistent}"), [
            "c.yaml: sharedCache.passwordFile: cannot read password file /nonexistent: no such file",
        ])
        XCTAssertEqual(problemLines("sharedCache: {url: redis://r, encryptionKeyFile: \(keyFile), keyPrefx: x}"), [
            "c.yaml: sharedCache.keyPrefx: unknown key (did you mean 'keyPrefix'?)",
        ])
    }

    func testRenderShowsPathsNeverSecrets() throws {
        let config = try XCTUnwrap(parseOK("sharedCache: {url: redis://r:7000/2, encryptionKeyFile: \(keyFile), passwordFile: \(passwordFile)}"))
        let text = config.renderEffective()
        XCTAssertTrue(text.contains("sharedCache:\n  url: \"redis://r:7000/2\"\n  passwordFile: \"\(passwordFile)\""), text)
        XCTAssertTrue(text.contains("  encryptionKeyFile: \"\(keyFile)\"\n  keyPrefix: \"token-sidecar:\"\n  timeout: 250ms"), text)
        XCTAssertFalse(text.contains("SENTINEL"))
        XCTAssertFalse(text.contains("MDEy"))
        XCTAssertEqual(try ConfigLoader.parse(yaml: text, file: "c.yaml", environment: [:]).sharedCache, config.sharedCache,
                       "the rendering loads back")
        XCTAssertTrue(SidecarConfig().renderEffective().contains("sharedCache: null"))
    }
}
