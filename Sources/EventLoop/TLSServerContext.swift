import CLibevent
import Glibc

/// An OpenSSL server context (`SSL_CTX`): the certificate chain and key a TLS server presents,
/// TLS 1.2 minimum, no client certificate asked for.
///
/// Configured once, then shared by every worker loop (OpenSSL allows concurrent `SSL_new` on a
/// context that is no longer being modified), hence `@unchecked Sendable`. Used by
/// ``Connection/acceptTLS(socket:context:on:)``.
public final class TLSServerContext: @unchecked Sendable {
    let raw: OpaquePointer

    /// Loads `certificateFile` (PEM chain, leaf first) and `keyFile` (PEM private key); throws
    /// with a message naming the file that could not be used, or a key that does not match.
    public init(certificateFile: String, keyFile: String) throws(EventLoopError) {
        guard let ctx = SSL_CTX_new(TLS_server_method()) else { throw .system("SSL_CTX_new failed") }
        raw = ctx
        _ = shim_SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION)
        guard SSL_CTX_use_certificate_chain_file(ctx, certificateFile) == 1 else {
            throw .system("cannot load certificate \(certificateFile): \(TLSClientContext.lastError())")
        }
        guard SSL_CTX_use_PrivateKey_file(ctx, keyFile, SSL_FILETYPE_PEM) == 1, SSL_CTX_check_private_key(ctx) == 1 else {
            throw .system("cannot load key \(keyFile) (or it does not match the certificate): \(TLSClientContext.lastError())")
        }
    }

    deinit { SSL_CTX_free(raw) }

    /// A new `SSL` for one accepted connection.
    func makeSSL() -> OpaquePointer? { SSL_new(raw) }
}
