import Config
import Crypto
import EventLoop
import Foundation

/// The TLS context of one set of token-server settings, rebuilt when its client certificate or
/// key file changed (compared by contents before each connection): `tls_client_auth` and mutual
/// TLS keep working across a certificate rotation without a restart.
final class ReloadingTLSContext: Sendable {
    private let settings: TLSSettings
    private let state: Locked<(files: [UInt8], context: TLSClientContext)>
    /// The context made for the certificate requests were last bound to.
    private let bound = Locked<(identity: ClientIdentity, context: TLSClientContext)?>(nil)

    /// Builds the first context; throws naming the file that cannot be used.
    init(_ settings: TLSSettings) throws(EventLoopError) {
        self.settings = settings
        state = Locked((ReloadingTLSContext.contents(settings) ?? [], try ReloadingTLSContext.make(settings)))
    }

    /// The context to connect with now. Presenting `identity` (the certificate a request is
    /// bound to): a context made with exactly it (kept while it stays the one asked for).
    /// Otherwise, without a client certificate it never changes; with one, a changed pair of
    /// files gives a new context, and a pair that cannot be loaded keeps the previous context
    /// (`problem` hears why).
    func current(presenting identity: ClientIdentity? = nil, problem: (String) -> Void) -> TLSClientContext {
        if let identity {
            if let known = bound.withLock({ $0?.identity == identity ? $0?.context : nil }) { return known }
            do {
                let context = try TLSClientContext(caFile: settings.caFile, identity: identity,
                                                   insecureSkipVerify: settings.insecureSkipVerify)
                bound.withLock { $0 = (identity, context) }
                return context
            } catch {
                problem("\(error)")
            }
        }
        guard settings.clientCert != nil, let files = ReloadingTLSContext.contents(settings) else {
            return state.withLock { $0.context }
        }
        if let unchanged = state.withLock({ $0.files == files ? $0.context : nil }) { return unchanged }
        do {
            let context = try ReloadingTLSContext.make(settings)
            state.withLock { $0 = (files, context) }
            return context
        } catch {
            problem("\(error)")
            return state.withLock { $0.context }
        }
    }

    private static func make(_ tls: TLSSettings) throws(EventLoopError) -> TLSClientContext {
        try TLSClientContext(caFile: tls.caFile, clientCert: tls.clientCert, clientKey: tls.clientKey,
                             insecureSkipVerify: tls.insecureSkipVerify)
    }

    /// The certificate's and the key's bytes, one after the other (nil when either cannot be read).
    private static func contents(_ settings: TLSSettings) -> [UInt8]? {
        guard let cert = settings.clientCert, let key = settings.clientKey,
              let certBytes = FileManager.default.contents(atPath: cert),
              let keyBytes = FileManager.default.contents(atPath: key) else { return nil }
        return Array(certBytes) + [0] + Array(keyBytes)
    }
}
