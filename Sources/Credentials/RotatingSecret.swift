import Config
import Logging
import TokenManager
import EventLoop

/// A client secret read at start and, from a `secretFile`, again before every fetch: a rotated
/// secret is used by the next fetch without a restart. When the file cannot be read any more,
/// the last good secret stays in use and the problem is logged (never the secret).
final class RotatingSecret: Sendable {
    private let source: SecretSource
    private let credential: String
    private let environment: [String: String]
    private let logger: Logger
    private let lastGood: Locked<String>

    /// Reads the secret now; throws naming the credential when it cannot be read.
    init(_ source: SecretSource?, credential: String, environment: [String: String], logger: Logger) throws {
        guard let source else { throw FactoryError("credential '\(credential)': the client secret is missing") }
        self.source = source
        self.credential = credential
        self.environment = environment
        self.logger = logger
        do {
            lastGood = Locked(try source.read(environment: environment))
        } catch {
            throw FactoryError("credential '\(credential)': \(error)")
        }
    }

    /// The secret for the next fetch.
    func current() -> String {
        guard case .file = source else { return lastGood.withLock { $0 } }
        do {
            let secret = try source.read(environment: environment)
            lastGood.withLock { $0 = secret }
            return secret
        } catch {
            logger.error("cannot re-read the secret file; using the previous secret",
                         metadata: ["credential": .string(credential), "error": .string("\(error)")])
            return lastGood.withLock { $0 }
        }
    }
}
