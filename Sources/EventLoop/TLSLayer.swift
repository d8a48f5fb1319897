import CLibevent
import COpenSSL
import Crypto
import Glibc

/// TLS on a ``SocketChannel``: one OpenSSL `SSL` driven directly over the channel's socket,
/// reading plaintext into and writing it from the connection's own evbuffers — the transport
/// layer of a TLS ``SocketConnection`` (Envoy calls it a transport socket). The channel keeps
/// its batching and flush rules; this type only turns "read" and "write" into `SSL_read_ex` and
/// `SSL_write_ex`, and runs the handshake.
///
/// - **Reads:** OpenSSL reads ahead (`read_ahead`, a ``readBufferLength`` buffer): one `read(2)`
///   takes in what has arrived, and each `SSL_read_ex` decrypts one record into the input. Reading
///   stops once nothing decrypted or buffered is left, so a readiness costs no `EAGAIN` read;
///   what is still buffered when the input is full (or reading pauses) is read later without
///   the socket becoming readable again (``hasBufferedInput``).
/// - **Writes:** records of up to 16 KiB, each handed to the kernel as it is made (as nginx and
///   HAProxy do). Small queued pieces are joined into one record first.
/// - **Ends:** a `close_notify` or a close without one both end the stream (peers often skip
///   `close_notify`; close-delimited bodies end that way).
///
/// Owns its `SSL` (freed by ``free()``, or at deinit); the socket stays the channel's. Confined
/// to its loop's thread, like the channel.
final class TLSLayer {
    /// Which side of the handshake this is.
    enum Role {
        /// The client; `context` is kept as long as the connection: its session slots are
        /// reached from OpenSSL's new-session callback through the `SSL`, and a context may be
        /// replaced (a rotated client certificate, a reloaded config) meanwhile.
        case client(TLSClientContext)
        /// The server, presenting `context`'s certificate.
        case server(TLSServerContext)
    }

    /// What a handshake step led to.
    enum HandshakeStep: Equatable {
        /// The handshake completed (and, for a client, the peer verified).
        case done
        /// It waits for the socket to become readable.
        case wantRead
        /// It waits for the socket to become writable.
        case wantWrite
        /// It failed.
        case failed(ConnectionEnd)
    }

    /// What one read turn led to.
    enum ReadOutcome {
        /// `count` plaintext bytes were appended (maybe 0: only records without application
        /// data, such as a session ticket, arrived). `more`: the turn stopped with the room
        /// used up while OpenSSL holds whole records, or with an end to report, which the socket
        /// will not signal again. (After a read that would block it signals; a partial record
        /// held here is not "more".)
        case bytes(Int, more: Bool)
        /// OpenSSL must write before it can read on (rare: a key update): wait for writability.
        /// (``readWantsWrite`` may also be set after `bytes`.)
        case wantWrite
        /// The stream ended.
        case ended(ConnectionEnd)
    }

    /// What one write turn led to.
    enum WriteOutcome {
        /// Everything queued was handed to the kernel.
        case drained
        /// The kernel takes no more for now.
        case wantWrite
        /// OpenSSL must read before it can write on (TLS 1.2 renegotiation).
        case wantRead
        /// The write failed.
        case failed(ConnectionEnd)
    }

    /// How much ciphertext one `read(2)` may take in: four records (without read-ahead, as
    /// libevent's filter did, every record took a read for its header and another for its
    /// body). A readiness reads once (no `EAGAIN` read), so this is what a busy connection
    /// moves per loop iteration: with 16 KiB, a 1 MiB body took 66 reads and 34 writes to the
    /// app (32 KiB each); with 64 KiB, 60 syscalls in all and about 7% less CPU per MiB
    /// (`peers.sh` with `BACKEND_TLS=1`; HAProxy makes 204). The buffer is held only while it
    /// has bytes (`SSL_MODE_RELEASE_BUFFERS`), and comes from ``ChunkCache``.
    static let readBufferLength = 64 * 1024
    /// Most plaintext per record (TLS's limit).
    static let recordSize = 16 * 1024

    private var ssl: OpaquePointer?
    let role: Role
    /// The handshake completed.
    private(set) var isEstablished = false
    /// A TLS failure (not a clean end) was seen: the session must not be resumed.
    private(set) var failed = false
    /// A read stopped because OpenSSL must write first; the next writability reads again.
    var readWantsWrite = false
    /// A write stopped because OpenSSL must read first; the next readability writes again.
    var writeWantsRead = false
    /// An end seen after bytes were read in the same turn: reported by the next read.
    private var deferredEnd: ConnectionEnd?
    private(set) var sessionResumed = false
    private(set) var serverName: String?
    private(set) var applicationProtocol: String?

    /// Wraps `ssl` (taken over: freed on failure too) over `fd`, in `role`'s state.
    init?(ssl: OpaquePointer, fd: Int32, role: Role) {
        self.role = role
        guard SSL_set_fd(ssl, fd) == 1 else {
            SSL_free(ssl)
            return nil
        }
        self.ssl = ssl
        switch role {
        case .client: SSL_set_connect_state(ssl)
        case .server: SSL_set_accept_state(ssl)
        }
        // Buffers go back while a connection has nothing pending (nginx does the same): an idle
        // pooled or app connection holds none. Keeping them cost as much memory and saved no
        // measurable CPU (c50 and 1 MiB with a TLS backend, within the runs' noise).
        _ = shim_SSL_set_mode(ssl, Int(SSL_MODE_ENABLE_PARTIAL_WRITE) | Int(SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER)
                              | Int(SSL_MODE_RELEASE_BUFFERS))
        // Peers often close without close_notify: an end of stream, not an error.
        shim_SSL_ignore_unexpected_eof(ssl)
        SSL_set_read_ahead(ssl, 1)
        SSL_set_default_read_buffer_len(ssl, Self.readBufferLength)
    }

    deinit { free() }

    /// Frees the `SSL` (on the connection's close). A completed, unfailed session is marked
    /// shut down cleanly first: freed otherwise, OpenSSL would mark it bad and never resume it.
    func free() {
        guard let ssl else { return }
        if isEstablished && !failed { SSL_set_shutdown(ssl, SSL_SENT_SHUTDOWN | SSL_RECEIVED_SHUTDOWN) }
        SSL_free(ssl)
        self.ssl = nil
    }

    // MARK: - handshake

    /// Runs the handshake as far as the socket allows.
    func handshake() -> HandshakeStep {
        guard let ssl else { return .failed(.tlsProtocol(message: "the TLS connection is closed")) }
        ERR_clear_error()
        let result = SSL_do_handshake(ssl)
        if result == 1 {
            established(ssl)
            return .done
        }
        switch SSL_get_error(ssl, result) {
        case SSL_ERROR_WANT_READ: return .wantRead
        case SSL_ERROR_WANT_WRITE: return .wantWrite
        case let code:
            failed = true
            return .failed(handshakeFailure(ssl, code: code))
        }
    }

    private func established(_ ssl: OpaquePointer) {
        isEstablished = true
        sessionResumed = SSL_session_reused(ssl) == 1
        applicationProtocol = Self.negotiatedProtocol(ssl)
        if case .server = role {
            if let name = SSL_get_servername(ssl, TLSEXT_NAMETYPE_host_name) { serverName = String(cString: name) }
            // One TLS 1.3 ticket, sent with the first bytes written (see TLSServerContext).
            if SSL_version(ssl) == TLS1_3_VERSION { _ = SSL_new_session_ticket(ssl) }
        }
    }

    /// Why a handshake failed: the certificate (with OpenSSL's reason), the socket, or the
    /// protocol.
    private func handshakeFailure(_ ssl: OpaquePointer, code: Int32) -> ConnectionEnd {
        if let failure = Self.certificateFailure(ssl) {
            ERR_clear_error()
            return failure
        }
        if code == SSL_ERROR_SYSCALL, ERR_peek_error() == 0 {
            let errno = shim_errno()
            if errno == ECONNREFUSED { return .refused }
            if errno != 0 { return .socketError(errno: errno) }
        }
        if code == SSL_ERROR_ZERO_RETURN || (code == SSL_ERROR_SYSCALL && ERR_peek_error() == 0) {
            return .tlsProtocol(message: "the peer closed the connection during the TLS handshake")
        }
        return .tlsProtocol(message: libraryErrors() ?? "the TLS handshake failed")
    }

    /// OpenSSL's queued errors as text (``CryptoError/openSSLErrors()``: the queue emptied), or
    /// nil when there are none.
    private func libraryErrors() -> String? {
        ERR_peek_error() == 0 ? nil : CryptoError.openSSLErrors()
    }

    /// The application protocol (ALPN) a completed handshake agreed on, if any.
    static func negotiatedProtocol(_ ssl: OpaquePointer) -> String? {
        var selected: UnsafePointer<UInt8>?
        var length: UInt32 = 0
        SSL_get0_alpn_selected(ssl, &selected, &length)
        guard let selected, length > 0 else { return nil }
        return String(decoding: UnsafeBufferPointer(start: selected, count: Int(length)), as: UTF8.self)
    }

    /// A handshake that failed on the peer's certificate (untrusted, wrong name, expired), with
    /// OpenSSL's reason; nil when verification did not fail.
    static func certificateFailure(_ ssl: OpaquePointer) -> ConnectionEnd? {
        let verify = SSL_get_verify_result(ssl)
        guard verify != X509_V_OK else { return nil }
        return .tlsCertificate(message: String(cString: X509_verify_cert_error_string(verify)))
    }

    /// Empties this thread's OpenSSL error queue before an I/O call, as `SSL_get_error` needs.
    /// Only when something is queued: `ERR_clear_error` resets all 16 slots every time (about
    /// 840 instructions, twice per proxied request over TLS), while looking costs a few dozen.
    @inline(__always)
    private static func clearErrorQueue() {
        if ERR_peek_error() != 0 { ERR_clear_error() }
    }

    // MARK: - reading

    /// Whether plaintext, records or an end are held by OpenSSL (or here) that the socket will
    /// not signal again: read them without waiting for readability.
    var hasBufferedInput: Bool {
        guard let ssl else { return false }
        return deferredEnd != nil || SSL_has_pending(ssl) == 1
    }

    /// Decrypts into `input`, up to `room` bytes, until OpenSSL has nothing decrypted or
    /// buffered left (the socket is then read at most once per record batch).
    func read(into input: OpaquePointer, room: Int) -> ReadOutcome {
        if let end = deferredEnd {
            deferredEnd = nil
            return .ended(end)
        }
        guard let ssl else { return .ended(.endOfStream) }
        var total = 0
        while total < room {
            var vector = iovec()
            guard evbuffer_reserve_space(input, room - total, &vector, 1) == 1, let base = vector.iov_base else { break }
            var got = 0
            Self.clearErrorQueue()
            let result = SSL_read_ex(ssl, base, min(room - total, vector.iov_len), &got)
            if result == 1 {
                vector.iov_len = got
                evbuffer_commit_space(input, &vector, 1)
                total += got
                if SSL_has_pending(ssl) == 0 { return .bytes(total, more: false) }
                continue
            }
            let end: ConnectionEnd
            switch SSL_get_error(ssl, result) {
            case SSL_ERROR_WANT_READ:
                return .bytes(total, more: false)
            case SSL_ERROR_WANT_WRITE:
                readWantsWrite = true
                return total > 0 ? .bytes(total, more: false) : .wantWrite
            case SSL_ERROR_ZERO_RETURN:
                end = .endOfStream
            case SSL_ERROR_SYSCALL where ERR_peek_error() == 0:
                let errno = shim_errno()
                end = errno == 0 ? .endOfStream : .socketError(errno: errno)
                if errno != 0 { failed = true }
            default:
                failed = true
                end = .tlsProtocol(message: libraryErrors() ?? "TLS read failed")
            }
            if total > 0 {
                deferredEnd = end
                return .bytes(total, more: true)
            }
            return .ended(end)
        }
        return .bytes(total, more: SSL_has_pending(ssl) == 1)
    }

    /// Whether the peer has sent application data, an end, or nothing (a TLS-aware peek: a
    /// session ticket alone is nothing). Processes what the socket holds without consuming
    /// plaintext; what it buffers is read later (``hasBufferedInput``).
    func peek() -> PeerActivity {
        guard let ssl else { return .closed }
        if deferredEnd != nil { return .closed }
        if SSL_pending(ssl) > 0 { return .data }
        var byte: UInt8 = 0
        var got = 0
        Self.clearErrorQueue()
        let result = SSL_peek_ex(ssl, &byte, 1, &got)
        if result == 1 { return .data }
        switch SSL_get_error(ssl, result) {
        case SSL_ERROR_WANT_READ, SSL_ERROR_WANT_WRITE:
            return .quiet
        default:
            ERR_clear_error()
            return .closed
        }
    }

    // MARK: - writing

    /// Encrypts and sends what `output` holds, a record at a time, draining what was sent.
    func write(from output: OpaquePointer) -> WriteOutcome {
        guard let ssl else { return .failed(.endOfStream) }
        while case let length = evbuffer_get_length(output), length > 0 {
            let count = min(length, Self.recordSize)
            // Joins small pieces into one record; free when the first piece is large enough.
            guard let bytes = evbuffer_pullup(output, count) else { return .failed(.socketError(errno: ENOMEM)) }
            var written = 0
            Self.clearErrorQueue()
            let result = SSL_write_ex(ssl, bytes, count, &written)
            if result == 1 {
                evbuffer_drain(output, written)
                continue
            }
            switch SSL_get_error(ssl, result) {
            case SSL_ERROR_WANT_WRITE:
                return .wantWrite
            case SSL_ERROR_WANT_READ:
                writeWantsRead = true
                return .wantRead
            case SSL_ERROR_SYSCALL where ERR_peek_error() == 0:
                failed = true
                let errno = shim_errno()
                return .failed(errno == ECONNREFUSED ? .refused : .socketError(errno: errno == 0 ? EPIPE : errno))
            default:
                failed = true
                return .failed(.tlsProtocol(message: libraryErrors() ?? "TLS write failed"))
            }
        }
        return .drained
    }

    /// Sends `close_notify` (a server before its FIN: without it a client cannot tell a body
    /// that ends with the connection from a truncated one; OpenSSL 3 reports "unexpected eof").
    func sendCloseNotify() {
        guard let ssl, isEstablished, !failed else { return }
        ERR_clear_error()
        // A ticket asked for after the handshake and not sent yet (nothing was written) keeps
        // the connection "in init", where OpenSSL refuses to shut down: send it first.
        if SSL_in_init(ssl) == 1 { _ = SSL_do_handshake(ssl) }
        _ = SSL_shutdown(ssl)
        ERR_clear_error()
    }
}
