import CLibevent
import COpenSSL
import Crypto
import Glibc

/// An OpenSSL server context (`SSL_CTX`): the certificate chain and key a TLS server presents,
/// TLS 1.2 minimum (1.3 allowed), no client certificate asked for, ALPN answered with
/// `http/1.1` — or, for an interception leaf, `h2` first when the client offers it (a client
/// offering neither gets no ALPN and speaks HTTP/1.1 or leaves),
/// session tickets on (OpenSSL's default, left alone) so returning clients resume.
///
/// Configured once, then shared by every worker loop (OpenSSL allows concurrent `SSL_new` on a
/// context that is no longer being modified), hence `@unchecked Sendable`. Used by
/// ``Connection/acceptTLS(socket:context:on:)``.
public final class TLSServerContext: @unchecked Sendable {
    let raw: OpaquePointer

    /// Loads `certificateFile` (PEM chain, leaf first) and `keyFile` (PEM private key); throws
    /// with a message naming the file that could not be used, or a key that does not match.
    public init(certificateFile: String, keyFile: String) throws(EventLoopError) {
        guard let ctx = TLSServerContext.newContext(offersHTTP2: false) else { throw .system("SSL_CTX_new failed") }
        raw = ctx
        guard SSL_CTX_use_certificate_chain_file(ctx, certificateFile) == 1 else {
            throw .system("cannot load certificate \(certificateFile): \(CryptoError.openSSLErrors())")
        }
        guard SSL_CTX_use_PrivateKey_file(ctx, keyFile, SSL_FILETYPE_PEM) == 1, SSL_CTX_check_private_key(ctx) == 1 else {
            throw .system("cannot load key \(keyFile) (or it does not match the certificate): \(CryptoError.openSSLErrors())")
        }
    }

    /// Presents a leaf minted for interception, followed by its chain, with its key; offers
    /// `h2` before `http/1.1` (the proxy serves HTTP/2 apps in intercepted tunnels).
    public convenience init(leaf: InterceptLeaf) throws(CryptoError) {
        try self.init(certificate: leaf.certificate, chain: leaf.chain, key: leaf.key, offersHTTP2: true)
    }

    /// Presents `certificate` (an `X509*`) followed by `chain` (issuers, nearest first), with
    /// `key` (an `EVP_PKEY*`). Takes references of its own: the caller still owns (and frees)
    /// what it passed.
    init(certificate: OpaquePointer, chain: [OpaquePointer], key: OpaquePointer, offersHTTP2: Bool = false) throws(CryptoError) {
        guard let ctx = TLSServerContext.newContext(offersHTTP2: offersHTTP2) else { throw CryptoError("SSL_CTX_new failed") }
        raw = ctx
        guard SSL_CTX_use_certificate(ctx, certificate) == 1,
              chain.allSatisfy({ shim_SSL_CTX_add1_chain_cert(ctx, $0) == 1 }),
              SSL_CTX_use_PrivateKey(ctx, key) == 1, SSL_CTX_check_private_key(ctx) == 1 else {
            throw CryptoError("cannot use the certificate and key: \(CryptoError.openSSLErrors())")
        }
    }

    deinit { SSL_CTX_free(raw) }

    /// A new `SSL` for one accepted connection.
    func makeSSL() -> OpaquePointer? { SSL_new(raw) }

    /// The certificate this context presents, as PEM (for tests and diagnostics).
    package var leafCertificatePEM: String? {
        SSL_CTX_get0_certificate(raw).map { CertificateMint.pem($0) }
    }

    /// A server `SSL_CTX` with what every server context shares: TLS 1.2 minimum and the ALPN
    /// choice. Sessions resume by ticket, but a TLS 1.3 ticket is not sent right after the
    /// handshake (OpenSSL's default): the stream asks for one then, and it leaves with the
    /// first bytes the server writes (``TLSLayer``). A ticket that arrives on its
    /// own, while the app is writing its first request, hangs clients that read and write one
    /// TLS connection from two threads (the `websockets` package's sync client, over `wss://`,
    /// which never sent its handshake in about one run in four on a loaded machine).
    private static func newContext(offersHTTP2: Bool) -> OpaquePointer? {
        guard let ctx = SSL_CTX_new(TLS_server_method()) else { return nil }
        _ = shim_SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION)
        _ = SSL_CTX_set_num_tickets(ctx, 0)
        // The callback's argument is a flag, not a pointer: non-nil offers `h2`.
        SSL_CTX_set_alpn_select_cb(ctx, tlsALPNSelectTrampoline, offersHTTP2 ? UnsafeMutableRawPointer(bitPattern: 1) : nil)
        return ctx
    }
}
