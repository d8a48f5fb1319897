import Redis
import TokenManager

/// The shared token cache's store on Redis: `GET`, `SET … NX PX` for the lease, `SET … PX` for
/// the sealed token, and compare-and-delete (a Lua script through `EVAL`) for releasing the lease
/// and removing a rejected token. Confined to the client's loop (the token loop).
public final class RedisTokenStore: SharedTokenStore {
    /// The client every operation goes through.
    public let client: RedisClient

    /// Deletes `KEYS[1]` only if it holds exactly `ARGV[1]`.
    static let compareAndDelete = "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) else return 0 end"

    /// `INCRBY KEYS[1] ARGV[1]`, and a TTL of `ARGV[2]` ms on a counter that has none (new).
    static let addWithTTL = "local v = redis.call('INCRBY', KEYS[1], ARGV[1]) if redis.call('PTTL', KEYS[1]) < 0 then redis.call('PEXPIRE', KEYS[1], ARGV[2]) end return v"

    /// A token bucket in a hash (`t`: tokens, `at`: when, in ms of the server's `TIME`, so every
    /// replica refills by one clock; a clock that went back refills nothing but is taken as
    /// now): refilled, `ARGV[3]` taken (the debt floored at 16 × (rate + burst): room for every
    /// replica of a large fleet spending its burst at once after a quiet spell), kept `ARGV[4]`
    /// ms; answers the tokens left as text (a Lua number would be truncated to an integer).
    /// Needs Redis 5 or later (`TIME` before a write in a script).
    static let takeTokens = """
        local t = redis.call('TIME') local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000) \
        local rate = tonumber(ARGV[1]) local burst = tonumber(ARGV[2]) \
        local v = redis.call('HMGET', KEYS[1], 't', 'at') local tokens = tonumber(v[1]) local at = tonumber(v[2]) \
        if tokens == nil or at == nil then tokens = burst at = now end \
        if now > at then tokens = math.min(burst, tokens + (now - at) * rate / 1000) end at = now \
        tokens = math.max(-16 * (rate + burst), tokens - tonumber(ARGV[3])) \
        redis.call('HSET', KEYS[1], 't', tostring(tokens), 'at', tostring(at)) redis.call('PEXPIRE', KEYS[1], ARGV[4]) \
        return tostring(tokens)
        """

    /// Creates a store on `client`.
    public init(client: RedisClient) {
        self.client = client
    }

    /// `GET key`.
    public func read(_ key: String, _ completion: @escaping (Result<[UInt8]?, SharedStoreFailure>) -> Void) {
        client.send([Array("GET".utf8), Array(key.utf8)]) { result in
            switch result {
            case .success(.bulkString(let bytes)): completion(.success(bytes))
            case .success: completion(.failure(SharedStoreFailure("unexpected reply to GET")))
            case .failure(let error): completion(.failure(SharedStoreFailure(error.description)))
            }
        }
    }

    /// `SET key owner NX PX ttl`.
    public func acquireLease(_ key: String, owner: String, ttl: Duration,
                             _ completion: @escaping (Result<Bool, SharedStoreFailure>) -> Void) {
        client.send(["SET", key, owner, "NX", "PX", String(Self.milliseconds(ttl))].map { Array($0.utf8) }) { result in
            switch result {
            case .success(.simpleString("OK")): completion(.success(true))
            case .success(let value) where value.isNull: completion(.success(false))
            case .success: completion(.failure(SharedStoreFailure("unexpected reply to SET NX")))
            case .failure(let error): completion(.failure(SharedStoreFailure(error.description)))
            }
        }
    }

    /// `SET key value PX ttl`.
    public func write(_ key: String, value: [UInt8], ttl: Duration,
                      _ completion: @escaping (Result<Void, SharedStoreFailure>) -> Void) {
        client.send([Array("SET".utf8), Array(key.utf8), value, Array("PX".utf8), Array(String(Self.milliseconds(ttl)).utf8)]) { result in
            switch result {
            case .success(.simpleString("OK")): completion(.success(()))
            case .success: completion(.failure(SharedStoreFailure("unexpected reply to SET")))
            case .failure(let error): completion(.failure(SharedStoreFailure(error.description)))
            }
        }
    }

    /// `EVAL compare-and-delete 1 key value`.
    public func deleteIfEqual(_ key: String, value: [UInt8], _ completion: @escaping (Result<Bool, SharedStoreFailure>) -> Void) {
        client.send([Array("EVAL".utf8), Array(Self.compareAndDelete.utf8), Array("1".utf8), Array(key.utf8), value]) { result in
            switch result {
            case .success(.integer(let deleted)): completion(.success(deleted > 0))
            case .success: completion(.failure(SharedStoreFailure("unexpected reply to EVAL")))
            case .failure(let error): completion(.failure(SharedStoreFailure(error.description)))
            }
        }
    }

    /// `EVAL add-with-ttl 1 key delta ttl`.
    public func add(_ key: String, _ delta: Int, ttl: Duration, _ completion: @escaping (Result<Int, SharedStoreFailure>) -> Void) {
        client.send(["EVAL", Self.addWithTTL, "1", key, String(delta), String(Self.milliseconds(ttl))].map { Array($0.utf8) }) { result in
            switch result {
            case .success(.integer(let value)): completion(.success(Int(value)))
            case .success: completion(.failure(SharedStoreFailure("unexpected reply to EVAL")))
            case .failure(let error): completion(.failure(SharedStoreFailure(error.description)))
            }
        }
    }

    /// `EVAL take-tokens 1 key perSecond burst count ttl`.
    public func take(_ key: String, _ count: Int, perSecond: Double, burst: Int, ttl: Duration,
                     _ completion: @escaping (Result<Double, SharedStoreFailure>) -> Void) {
        client.send(["EVAL", Self.takeTokens, "1", key, String(perSecond), String(burst), String(count), String(Self.milliseconds(ttl))]
            .map { Array($0.utf8) }) { result in
            switch result {
            case .success(.bulkString(let bytes?)):
                guard let tokens = Double(String(decoding: bytes, as: UTF8.self)) else {
                    return completion(.failure(SharedStoreFailure("unexpected reply to EVAL")))
                }
                completion(.success(tokens))
            case .success: completion(.failure(SharedStoreFailure("unexpected reply to EVAL")))
            case .failure(let error): completion(.failure(SharedStoreFailure(error.description)))
            }
        }
    }

    /// Closes the client (its connection and timers).
    public func close() {
        client.close()
    }

    /// Whole milliseconds, at least 1.
    static func milliseconds(_ duration: Duration) -> Int64 {
        let (seconds, attoseconds) = duration.components
        return max(1, seconds * 1000 + attoseconds / 1_000_000_000_000_000)
    }
}
