// C shim for token-sidecar's OpenSSL users: `Crypto` (keys, signatures, digests, X.509) and the
// TLS transports in `EventLoop`.
//
// Swift cannot see function-like macros, and a few OpenSSL entry points are macros. Each wrapper
// here exists only because the thing it wraps is a macro. Nothing else belongs in this file.
#ifndef TOKEN_SIDECAR_COPENSSL_SHIM_H
#define TOKEN_SIDECAR_COPENSSL_SHIM_H

#include <openssl/ssl.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/x509v3.h>
#include <openssl/pem.h>
#include <openssl/hmac.h>
#include <openssl/ec.h>
#include <openssl/rand.h>

/// `SSL_set_tlsext_host_name` is a macro over SSL_ctrl (SNI).
static inline long shim_SSL_set_tlsext_host_name(SSL *ssl, const char *name) {
    return SSL_set_tlsext_host_name(ssl, name);
}

/// `SSL_CTX_set_min_proto_version` is a macro over SSL_CTX_ctrl.
static inline long shim_SSL_CTX_set_min_proto_version(SSL_CTX *ctx, int version) {
    return SSL_CTX_set_min_proto_version(ctx, version);
}

/// `SSL_CTX_set_session_cache_mode` is a macro over SSL_CTX_ctrl: a client cache whose sessions
/// the application keeps itself (per peer), not in OpenSSL's internal store.
static inline long shim_SSL_CTX_enable_client_session_callback(SSL_CTX *ctx) {
    return SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_CLIENT | SSL_SESS_CACHE_NO_INTERNAL_STORE);
}

/// `EVP_EC_gen` is a macro over the variadic `EVP_PKEY_Q_keygen`: a new EC key pair on `curve`.
static inline EVP_PKEY *shim_EVP_EC_gen(const char *curve) { return EVP_EC_gen(curve); }

/// `SSL_CTX_add1_chain_cert` is a macro over SSL_CTX_ctrl: adds `x509` (reference taken) to the
/// chain sent after the current certificate.
static inline long shim_SSL_CTX_add1_chain_cert(SSL_CTX *ctx, X509 *x509) {
    return SSL_CTX_add1_chain_cert(ctx, x509);
}

/// `SSL_set_mode` is a macro over SSL_ctrl: adds `mode` bits (partial writes, moving write
/// buffers, released buffers) to one connection.
static inline long shim_SSL_set_mode(SSL *ssl, long mode) { return SSL_set_mode(ssl, mode); }

/// `SSL_OP_IGNORE_UNEXPECTED_EOF` is a macro over `SSL_OP_BIT`: a peer that closes without
/// `close_notify` ends the stream (`SSL_ERROR_ZERO_RETURN`) instead of failing it.
static inline void shim_SSL_ignore_unexpected_eof(SSL *ssl) { SSL_set_options(ssl, SSL_OP_IGNORE_UNEXPECTED_EOF); }

#endif
