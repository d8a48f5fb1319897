import Logging

/// The one log line per fetch: credential, result, latency, expiry and fingerprint — never the
/// token, the secret or the response body.
enum FetchLog {
    static func success(_ logger: Logger, credential: String, grant: TokenGrant, state: TokenRefreshState,
                        latency: String, now: ContinuousClock.Instant) {
        var metadata: Logger.Metadata = [
            "credential": .string(credential), "result": "success", "latency_ms": .string(latency),
            "expires_in_s": .string(seconds(grant.lifetime)), "lifetime_source": .string(grant.lifetimeSource.rawValue),
        ]
        if let current = state.current { metadata["fingerprint"] = .string(current.token.fingerprint) }
        if let next = state.nextFetchAt { metadata["refresh_in_s"] = .string(seconds(next - now)) }
        logger.info("token fetched", metadata: metadata)
    }

    static func failure(_ logger: Logger, credential: String, error: TokenFetchError, state: TokenRefreshState,
                        latency: String, now: ContinuousClock.Instant) {
        var metadata: Logger.Metadata = [
            "credential": .string(credential), "result": .string(error.counterName), "latency_ms": .string(latency),
            "error": .string(error.description), "consecutive_failures": .string(String(state.consecutiveFailures)),
        ]
        if let next = state.nextFetchAt { metadata["retry_in_s"] = .string(seconds(next - now)) }
        if let token = state.usableToken(at: now), let current = state.current {
            metadata["fingerprint"] = .string(token.fingerprint)
            metadata["usable_for_s"] = .string(seconds(current.usableUntil - now))
        } else {
            metadata["usable_token"] = "none"
        }
        if error.isCredentialsRejected {
            logger.error("token fetch failed: the token endpoint rejected the credentials", metadata: metadata)
        } else {
            logger.warning("token fetch failed", metadata: metadata)
        }
    }

    static func milliseconds(_ duration: Duration) -> String {
        String(nanoseconds(duration) / 1_000_000)
    }

    static func seconds(_ duration: Duration) -> String {
        let tenths = nanoseconds(duration) / 100_000_000
        return "\(tenths / 10).\(tenths % 10)"
    }
}
