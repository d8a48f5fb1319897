import CLibevent
import COpenSSL
import Crypto
import Glibc

/// An OpenSSL client context (`SSL_CTX`): trust store, client certificate, TLS 1.2 minimum.
///
/// Configured once, then shared by every worker loop: OpenSSL allows concurrent `SSL_new` on a
/// context that is no longer being modified, hence `@unchecked Sendable`.
public final class TLSClientContext: @unchecked Sendable {
    let raw: OpaquePointer
    /// Whether peers are verified (false only with `insecureSkipVerify`).
    public let verifiesPeer: Bool
    /// The application protocols offered in ALPN, preferred first (none: no ALPN).
    public let offeredProtocols: [String]
    /// The session to resume per peer (`host:port`), shared by every loop.
    private let sessions = Locked<[String: TLSSessionSlot]>([:])
    /// Most peers with a remembered session (a forward proxy that may reach any host must not
    /// grow without bound); connections to further peers do full handshakes.
    static let maxSessionPeers = 1024

    /// Builds a context; throws with a message naming the file that could not be used.
    /// - Parameters:
    ///   - caFile: PEM bundle of trusted CAs; `nil` uses the system store.
    ///   - clientCert: client certificate chain (PEM) for mutual TLS.
    ///   - clientKey: private key (PEM) for `clientCert`.
    ///   - insecureSkipVerify: skip peer verification entirely (only when explicitly configured).
    ///   - alpn: application protocols to offer (ALPN, RFC 7301), preferred first; none: no ALPN.
    public init(caFile: String? = nil, clientCert: String? = nil, clientKey: String? = nil,
                insecureSkipVerify: Bool = false, alpn: [String] = []) throws(EventLoopError) {
        guard let ctx = SSL_CTX_new(TLS_client_method()) else { throw .system("SSL_CTX_new failed") }
        raw = ctx
        verifiesPeer = !insecureSkipVerify
        offeredProtocols = alpn
        _ = shim_SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION)
        if !alpn.isEmpty {
            // The wire format: each name prefixed with its length.
            let wire = alpn.flatMap { [UInt8($0.utf8.count)] + Array($0.utf8) }
            // Returns 0 on success (unlike most of OpenSSL).
            guard SSL_CTX_set_alpn_protos(ctx, wire, UInt32(wire.count)) == 0 else {
                throw .system("cannot offer ALPN \(alpn): \(CryptoError.openSSLErrors())")
            }
        }
        // Every new session (a TLS 1.3 ticket, or a TLS 1.2 session) is handed to us and kept
        // for the peer it came from, so the next connection to that peer resumes it.
        _ = shim_SSL_CTX_enable_client_session_callback(ctx)
        SSL_CTX_sess_set_new_cb(ctx, tlsNewSessionTrampoline)
        if insecureSkipVerify {
            SSL_CTX_set_verify(ctx, SSL_VERIFY_NONE, nil)
        } else {
            SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, nil)
            if let caFile {
                guard SSL_CTX_load_verify_locations(ctx, caFile, nil) == 1 else {
                    throw .system("cannot load CA file \(caFile): \(CryptoError.openSSLErrors())")
                }
            } else if SSL_CTX_set_default_verify_paths(ctx) != 1 {
                throw .system("cannot load the system CA store: \(CryptoError.openSSLErrors())")
            }
        }
        if let cert = clientCert {
            guard SSL_CTX_use_certificate_chain_file(ctx, cert) == 1 else {
                throw .system("cannot load client certificate \(cert): \(CryptoError.openSSLErrors())")
            }
        }
        if let key = clientKey {
            guard SSL_CTX_use_PrivateKey_file(ctx, key, SSL_FILETYPE_PEM) == 1, SSL_CTX_check_private_key(ctx) == 1 else {
                throw .system("cannot load client key \(key) (or it does not match the certificate): \(CryptoError.openSSLErrors())")
            }
        }
    }

    deinit { SSL_CTX_free(raw) }

    /// A new `SSL` for one connection to `host`: SNI for names, the name or IP address that
    /// the certificate must match, and the last session from `host:port` to resume.
    func makeSSL(host: String, port: Int) -> OpaquePointer? {
        guard let ssl = SSL_new(raw) else { return nil }
        if let slot = sessionSlot(for: "\(host):\(port)") {
            // The slot outlives every SSL that points at it: slots live as long as the context,
            // and each TLS connection keeps its context alive.
            SSL_set_ex_data(ssl, 0, Unmanaged.passUnretained(slot).toOpaque())
            if let session = slot.session() {
                SSL_set_session(ssl, session)
                SSL_SESSION_free(session)
            }
        }
        if verifiesPeer {
            if TLSClientContext.isIPAddress(host) {
                // No SNI for IP literals (RFC 6066); verify the address against the certificate.
                X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), host)
            } else {
                _ = shim_SSL_set_tlsext_host_name(ssl, host)
                SSL_set1_host(ssl, host)
            }
        } else if !TLSClientContext.isIPAddress(host) {
            _ = shim_SSL_set_tlsext_host_name(ssl, host)
        }
        return ssl
    }

    private func sessionSlot(for peer: String) -> TLSSessionSlot? {
        sessions.withLock { slots in
            if let slot = slots[peer] { return slot }
            guard slots.count < TLSClientContext.maxSessionPeers else { return nil }
            let slot = TLSSessionSlot()
            slots[peer] = slot
            return slot
        }
    }

    static func isIPAddress(_ host: String) -> Bool {
        var v4 = in_addr(), v6 = in6_addr()
        return inet_pton(AF_INET, host, &v4) == 1 || inet_pton(AF_INET6, host, &v6) == 1
    }
}

/// The sessions to resume for one peer: the newest few it issued, each offered once, then a
/// copy of the newest.
///
/// OpenSSL marks a TLS 1.3 session object used once it has resumed a connection (tickets are
/// meant for one use), so one object shared by every new connection resumed one of them and
/// left the rest to full handshakes: filling a pool of 49 connections after one request resumed
/// 9. Servers with stateless tickets (OpenSSL's default, nginx's) accept a ticket again, so,
/// as HAProxy does with the session it keeps per server, a connection with no unused ticket
/// left gets its own copy of the newest session (`SSL_SESSION_dup`); a server that refuses a
/// ticket twice answers with a full handshake, as before.
final class TLSSessionSlot: @unchecked Sendable {
    /// Unused sessions kept at most (TLS 1.3 servers issue two per full handshake, one per
    /// resumption).
    static let maxUnused = 4

    // `SSL_SESSION`s are reference-counted; each one held here carries its own reference
    // (`newest` is a private copy, never handed out).
    private let state = Locked<(unused: [OpaquePointer], newest: OpaquePointer?)>(([], nil))

    deinit {
        let (unused, newest) = state.withLock { $0 }
        unused.forEach { SSL_SESSION_free($0) }
        if let newest { SSL_SESSION_free(newest) }
    }

    /// Keeps `session` (taking over the caller's reference) as unused, and a copy of it as the
    /// newest: a copy never handed out, since a session object that resumed a connection is
    /// marked used, and so would be every copy made of it afterwards.
    func store(_ session: OpaquePointer) {
        let pristine = SSL_SESSION_dup(session)
        let released: [OpaquePointer] = state.withLock { slot in
            var released: [OpaquePointer] = []
            if let pristine {
                if let old = slot.newest { released.append(old) }
                slot.newest = pristine
            }
            slot.unused.append(session)
            if slot.unused.count > Self.maxUnused { released.append(slot.unused.removeFirst()) }
            return released
        }
        released.forEach { SSL_SESSION_free($0) }
    }

    /// A session to resume, with a reference for the caller to release: the newest unused one,
    /// else a copy of the newest; `nil` if none yet.
    func session() -> OpaquePointer? {
        state.withLock { slot in
            if let unused = slot.unused.popLast() { return unused }
            guard let newest = slot.newest else { return nil }
            return SSL_SESSION_dup(newest)
        }
    }
}
