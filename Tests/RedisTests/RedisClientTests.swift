import EventLoop
import Foundation
import Redis
import TestSupport
import XCTest

/// The client against a real redis-server: pipelined commands with AUTH and SELECT, binary
/// values, error replies, a server that never answers (timeout, then fail-fast backoff), and a
/// refused connection followed by recovery.
final class RedisClientTests: XCTestCase {
    private var thread: LoopThread!

    override func setUpWithError() throws {
        thread = try LoopThread { _ in }
        try thread.start()
    }

    override func tearDown() {
        thread?.stopAndJoin()
    }

    /// Sends `commands` in one go (pipelined) on the loop; the results in order.
    private func run(_ settings: RedisClientSettings, _ commands: [[[UInt8]]],
                     client existing: ClientBox? = nil) -> (results: [Result<RESPValue, RedisError>], client: ClientBox) {
        let box = existing ?? ClientBox(RedisClient(settings: settings, loop: thread.loop))
        let results = ResultsBox(count: commands.count)
        let done = expectation(description: "replies")
        done.expectedFulfillmentCount = commands.count
        thread.loop.execute {
            for (index, command) in commands.enumerated() {
                box.client.send(command) { result in
                    results.set(index, result)
                    done.fulfill()
                }
            }
        }
        wait(for: [done], timeout: 10)
        return (results.all, box)
    }

    private func command(_ parts: String...) -> [[UInt8]] { parts.map { Array($0.utf8) } }

    func testPipelinedCommandsWithAuthAndSelect() throws {
        let redis = try RedisServerProcess(password: "SENTINEL-PW")
        let settings = RedisClientSettings(host: "127.0.0.1", port: redis.port, password: "SENTINEL-PW", database: 3)
        let binary: [UInt8] = [0, 13, 10, 255, 36, 42]
        let (results, _) = run(settings, [
            command("SET", "k", "v"), [Array("SET".utf8), Array("b".utf8), binary], command("GET", "b"), command("GET", "missing"),
            command("SET", "k", "x", "NX"), command("INCR", "k"), command("CLIENT", "INFO"),
        ])
        XCTAssertEqual(try results[0].get(), .simpleString("OK"))
        XCTAssertEqual(try results[2].get(), .bulkString(binary))
        XCTAssertEqual(try results[3].get(), .bulkString(nil))
        XCTAssertEqual(try results[4].get(), .bulkString(nil), "NX on an existing key")
        guard case .failure(.server(let message)) = results[5] else { return XCTFail("\(results[5])") }
        XCTAssertTrue(message.hasPrefix("ERR"))
        guard case .success(.bulkString(let info?)) = results[6] else { return XCTFail("\(results[6])") }
        XCTAssertTrue(String(decoding: info, as: UTF8.self).contains("db=3"), "SELECT ran first")
    }

    func testWrongPasswordFailsWithoutSayingIt() throws {
        let redis = try RedisServerProcess(password: "right")
        let settings = RedisClientSettings(host: "127.0.0.1", port: redis.port, password: "SENTINEL-WRONG")
        let (results, _) = run(settings, [command("PING")])
        guard case .failure(let error) = results[0] else { return XCTFail("\(results[0])") }
        XCTAssertTrue(error.description.contains("AUTH refused"), error.description)
        XCTAssertFalse(error.description.contains("SENTINEL"))
    }

    func testSilentServerTimesOutThenFailsFastDuringBackoff() throws {
        let silent = try FixtureProcess(script: "TokenManagerTests/Fixtures/silent_server.py")
        let settings = RedisClientSettings(host: "127.0.0.1", port: silent.port, timeout: .milliseconds(200),
                                           reconnectDelay: .seconds(1))
        let started = Date()
        let (first, client) = run(settings, [command("GET", "a"), command("GET", "b")])
        let elapsed = Date().timeIntervalSince(started)
        XCTAssertEqual(first.map { (try? $0.get()) == nil }, [true, true])
        guard case .failure(.timeout) = first[0] else { return XCTFail("\(first[0])") }
        XCTAssertGreaterThanOrEqual(elapsed, 0.19)
        XCTAssertLessThan(elapsed, 2)
        let again = Date()
        let (second, _) = run(settings, [command("GET", "c")], client: client)
        guard case .failure(.unavailable) = second[0] else { return XCTFail("\(second[0])") }
        XCTAssertLessThan(Date().timeIntervalSince(again), 0.15, "no wait while backing off")
    }

    func testRefusedThenRecovers() throws {
        let port = RedisServerProcess.freePort()
        let settings = RedisClientSettings(host: "127.0.0.1", port: port, reconnectDelay: .milliseconds(50))
        let (refused, client) = run(settings, [command("PING")])
        guard case .failure(.unavailable) = refused[0] else { return XCTFail("\(refused[0])") }
        let redis = try RedisServerProcess(port: port)
        Thread.sleep(forTimeInterval: 0.1)    // past the backoff
        let (answer, _) = run(settings, [command("PING")], client: client)
        XCTAssertEqual(try answer[0].get(), .simpleString("PONG"), "the same client reconnects")
        _ = redis
    }
}

/// Carries the loop-confined client between test code and the loop.
final class ClientBox: @unchecked Sendable {
    let client: RedisClient
    init(_ client: RedisClient) { self.client = client }
}

/// Results written on the loop, read after the expectation.
private final class ResultsBox: @unchecked Sendable {
    private let lock = NSLock()
    private var values: [Result<RESPValue, RedisError>?]
    init(count: Int) { values = Array(repeating: nil, count: count) }
    func set(_ index: Int, _ value: Result<RESPValue, RedisError>) { lock.lock(); values[index] = value; lock.unlock() }
    var all: [Result<RESPValue, RedisError>] { lock.lock(); defer { lock.unlock() }; return values.map { $0! } }
}
