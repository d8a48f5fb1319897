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
