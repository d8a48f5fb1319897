import EventLoop
import HTTP1
import Synchronization

/// The DPoP nonces (RFC 9449 §8, §9) a credential's servers handed out, one per origin
/// (`https://host:port`), and how often one was demanded. Bounded: at most ``capacity``
/// origins; a newer nonce replaces the older one, a new origin beyond the bound replaces an
/// arbitrary one (that origin then asks again, costing one retry).
///
/// Shared by every worker thread (a mutex; a lookup per forwarded request).
public final class DPoPNonces: Sendable {
    /// The most origins remembered.
    public static let capacity = 64
    /// The longest nonce kept (a longer one is ignored: the request goes without, and the
    /// server's challenge is passed on).
    public static let maxLength = 1024

    private let table = Locked<[String: String]>([:])
    private let tokenRetries = Atomic<Int>(0)
    private let resourceRetries = Atomic<Int>(0)

    /// An empty store.
    public init() {}

    /// The nonce `origin` gave last, if any.
    public func nonce(for origin: String) -> String? {
        table.withLock { $0[origin] }
    }

    /// Remembers `nonce` for `origin`, when it is a valid nonce (RFC 9449 §8.1: `NQCHAR`, that
    /// is visible ASCII other than `"` and `\`, at most ``maxLength``).
    public func remember(_ nonce: some StringProtocol, for origin: String) {
        guard DPoPNonces.isValid(nonce) else { return }
        let value = String(nonce)
        table.withLock { table in
            if table[origin] == value { return }
            if table[origin] == nil && table.count >= DPoPNonces.capacity, let victim = table.keys.first {
                table[victim] = nil
            }
            table[origin] = value
        }
    }

    /// Remembers the `DPoP-Nonce` field of a response from `origin`, if it has one.
    public func remember(from fields: HTTPFields, origin: String) {
        if let nonce = fields.first("DPoP-Nonce") { remember(nonce, for: origin) }
    }

    /// Whether `nonce` can be sent back (see ``remember(_:for:)``).
    public static func isValid(_ nonce: some StringProtocol) -> Bool {
        !nonce.isEmpty && nonce.utf8.count <= maxLength
            && nonce.utf8.allSatisfy { $0 == 0x21 || (0x23...0x5B).contains($0) || (0x5D...0x7E).contains($0) }
    }

    /// A token request was sent again because the token server demanded a nonce.
    public func countTokenEndpointRetry() { tokenRetries.add(1, ordering: .relaxed) }
    /// A request was replayed because a resource server demanded a nonce.
    public func countResourceRetry() { resourceRetries.add(1, ordering: .relaxed) }
    /// Nonce retries so far: at the token endpoint and at resource servers.
    public var retries: DPoPNonceRetries {
        DPoPNonceRetries(tokenEndpoint: tokenRetries.load(ordering: .relaxed), resource: resourceRetries.load(ordering: .relaxed))
    }
}

/// How many requests a credential sent again with a DPoP nonce a server demanded.
public struct DPoPNonceRetries: Sendable, Equatable {
    /// Token requests.
    public var tokenEndpoint: Int
    /// Forwarded requests (replayed once each).
    public var resource: Int
}
