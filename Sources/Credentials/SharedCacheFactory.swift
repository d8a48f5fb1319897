import Config
import EventLoop
import Foundation
import Redis
import TokenManager

/// Builds the fleet's shared token cache from `sharedCache:`: reads the password, user name and
/// encryption key files, makes the TLS context for `rediss://`, and the Redis client on the
/// token loop. Errors name the file and key, never their contents.
public enum SharedCacheFactory {
    /// The client settings `config` describes (secrets read now).
    public static func clientSettings(_ config: SharedCacheConfig) throws -> RedisClientSettings {
        var tls: TLSClientContext?
        if config.url.isTLS {
            do {
                tls = try TLSClientContext(caFile: config.tls.caFile, clientCert: config.tls.clientCert,
                                           clientKey: config.tls.clientKey, insecureSkipVerify: config.tls.insecureSkipVerify)
            } catch {
                throw FactoryError("sharedCache: cannot set up TLS: \(error)")
            }
        }
        let password = try config.passwordFile.map { try readSecret($0, key: "passwordFile") }
        let username = try config.usernameFile.map { try readSecret($0, key: "usernameFile") }
        return RedisClientSettings(host: config.url.host, port: config.url.port, tls: tls, username: username,
                                   password: password, database: config.url.database, timeout: config.timeout)
    }

    /// The shared cache on a new Redis client bound to `loop` (nothing connects until first use).
    public static func make(_ config: SharedCacheConfig, loop: EventLoop) throws -> SharedTokenCache {
        let settings = try clientSettings(config)
        let key = try EncryptionKeyFile.read(config.encryptionKeyFile)
        guard let sealer = TokenSealer(key: key) else { throw FactoryError("sharedCache.encryptionKeyFile: not a 32-byte key") }
        let client = RedisClient(settings: settings, loop: loop)
        return SharedTokenCache(store: RedisTokenStore(client: client), sealer: sealer, keyPrefix: config.keyPrefix)
    }

    private static func readSecret(_ path: String, key: String) throws -> String {
        do {
            return try SecretSource.file(path).read(environment: [:])
        } catch {
            throw FactoryError("sharedCache.\(key): cannot read \(path)")
        }
    }
}
