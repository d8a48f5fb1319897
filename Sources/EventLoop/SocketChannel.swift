import CLibevent
import Glibc

/// The plain-socket channel of a ``Connection``: one non-blocking TCP socket, two persistent
/// libevent events (read, write) and the connection's two evbuffers, with the syscalls a ready
/// socket needs and no others.
///
/// - **Reads** go straight into reserved space at the end of the input buffer, up to
///   ``maxRead`` bytes per readiness (``firstRead`` until a read fills what it asked for; never
///   beyond the high watermark), with no `FIONREAD`
///   first (libevent's `evbuffer_read` asks for it and then caps every read at 4 KiB).
/// - **Writes** happen once per loop iteration, as soon as bytes are queued (the output buffer's
///   callback puts the connection on the loop's flush list). Write interest is registered only
///   when the kernel would block, and dropped once the output is empty again.
/// - **Read interest** stays registered: ``stopReading()`` takes effect lazily, dropping the
///   registration only if the peer sends while paused. A read high watermark suspends reading
///   until the consumer drains the input below it.
///
/// - **The read timeout** is a lazy ``Timer``, not a timeout on the read event: libevent
///   re-inserts a persistent event's timeout into its timer heap on every readiness, and each
///   (re)start of reading or change of timeout is another `event_add`. Pushing a lazy timer's
///   deadline back costs a clock read; the heap is touched only when an expiry comes due early.
///
/// Confined to the loop's thread, like its connection. The connection's `Unmanaged` pointer is
/// every callback's context.
final class SocketChannel {
    /// The socket.
    let fd: Int32
    private unowned(unsafe) let loop: EventLoop
    // The events and the context exist from ``attach(context:)`` on (the context is the
    // connection's pointer, which exists only once the connection holding this channel does).
    private var readEvent: OpaquePointer!
    private var writeEvent: OpaquePointer!
    private let input: OpaquePointer
    private let output: OpaquePointer
    private var context: UnsafeMutableRawPointer!
    private var inputWatch: OpaquePointer?
    /// The TLS layer of a TLS connection (reads and writes go through it); nil for plain TCP.
    let tls: TLSLayer?

    /// The most read per readiness: 128 KiB minus room for libevent's chunk header, so a fresh
    /// chunk is one 128 KiB allocation (libevent rounds chunk sizes up to a power of two).
    /// Measured with `peers.sh` (1 MiB responses, backend, proxy and wrk on one CPU): 256 KiB
    /// reads moved 1,158 MiB/s at 425 µs of CPU per MiB, 128 KiB reads 1,389 at 280, 64 KiB
    /// 1,363 at 275, 32 KiB 1,175 at 390 (HAProxy 1,120–1,169 at 322–344): a chunk the size
    /// of a cache's share is copied in and out while it is still there. A small message still
    /// costs one read, and an idle connection holds no chunk at all (drained chunks are freed).
    static let maxRead = 128 * 1024 - 128

    /// What a read asks for first: 16 KiB minus the chunk header. glibc frees a chunk of 64 KiB
    /// or more by consolidating its fast bins and checking whether to trim the heap (about 250
    /// instructions a free, two per proxied request); a head and a small body fit in this.
    /// A read that fills it asks for ``maxRead`` next, until a read returns less than this again.
    static let firstRead = 16 * 1024 - 128

    /// How much the next read asks for (``firstRead`` or ``maxRead``).
    private var readSize = SocketChannel.firstRead

    /// The owner wants bytes (``startReading()`` called and not ``stopReading()``).
    private(set) var readWanted = false
    /// The read event is registered with the loop.
    private var readArmed = false
    /// Reading is suspended because the input reached ``highWatermark``.
    private var suspendedByWatermark = false
    /// End of stream or a read error was seen: nothing more to read.
    private(set) var readEnded = false
    /// The write event is registered (the kernel would block, or a connect is in progress).
    private var writeArmed = false
    /// The connection is on the loop's flush list.
    var flushPending = false
    /// A connect was started and has not completed.
    private(set) var connecting = false
    /// The error of a connect that failed at once (reported from the loop, like any other).
    private var immediateConnectError: Int32 = 0
    /// In nanoseconds (converted once per change: it is restarted on every read).
    private var readTimeout: UInt64?
    /// Runs out ``readTimeout`` after the last read (or start of reading). A `let` (calls through
    /// an optional `var` retained it); its action is given in ``attach(context:)``.
    private let readTimer: Timer
    private var writeTimeout: timeval?
    /// Input is not read beyond this many bytes until consumed (0: no limit). Raised while
    /// reading is suspended at the old limit: reading resumes at once (the input may never
    /// change on its own: a consumer waiting for more bytes than the old limit held).
    var highWatermark = 0 {
        didSet {
            if suspendedByWatermark && highWatermark > oldValue { inputChanged() }
        }
    }

    /// `fd` must be non-blocking already (the listener accepts with `SOCK_NONBLOCK`; connects
    /// create it so). Nothing is registered until ``attach(context:)``.
    init(fd: Int32, loop: EventLoop, input: OpaquePointer, output: OpaquePointer, tls: TLSLayer? = nil) {
        self.fd = fd
        self.tls = tls
        self.loop = loop
        self.input = input
        self.output = output
        self.readTimer = Timer(on: loop) {}
    }

    /// Creates the events, with `context` (the connection's `Unmanaged`
    /// pointer) as every callback's argument. `false` when libevent could not allocate them
    /// (nothing is left registered).
    func attach(context: UnsafeMutableRawPointer) -> Bool {
        guard let readEvent = event_new(loop.base, fd, Int16(EV_READ | EV_PERSIST), socketReadTrampoline, context) else {
            return false
        }
        guard let writeEvent = event_new(loop.base, fd, Int16(EV_WRITE | EV_PERSIST), socketWriteTrampoline, context) else {
            event_free(readEvent)
            return false
        }
        self.readEvent = readEvent
        self.writeEvent = writeEvent
        self.context = context
        readTimer.action = {
            // What a read event's own timeout would have reported.
            Unmanaged<SocketConnection>.fromOpaque(context).takeUnretainedValue().socketReadable(Int16(EV_TIMEOUT))
        }
        return true
    }

    // MARK: - reading

    /// Wants bytes: registers the read event unless it still is (a lazy pause), and restarts
    /// the read timeout.
    func startReading() {
        readWanted = true
        guard !readEnded, !suspendedByWatermark else { return }
        if !readArmed { armRead() }
        restartReadTimer()
        readBufferedTLS()
    }

    /// A TLS layer holds input the socket will not signal again (records read ahead, or an
    /// end): a read readiness is made up, once reading is wanted and not suspended. (Inlined to
    /// one test on plain sockets, which pass here on every request.)
    @inline(__always)
    private func readBufferedTLS() {
        if let tls { readBuffered(tls) }
    }

    @inline(never)
    private func readBuffered(_ tls: TLSLayer) {
        guard tls.isEstablished, readWanted, !readEnded, !suspendedByWatermark, tls.hasBufferedInput else { return }
        event_active(readEvent, Int32(EV_READ), 0)
    }

    /// Wants no bytes for now. The registration stays (no syscall); only the timeout stops.
    func stopReading() {
        readWanted = false
        readTimer.suspend()
    }

    func armRead() {
        event_add(readEvent, nil)
        readArmed = true
    }

    /// Drops the read registration (one `epoll_ctl`); the read timeout stops with it.
    func disarmRead() {
        readTimer.suspend()
        guard readArmed else { return }
        event_del(readEvent)
        readArmed = false
    }

    /// Starts the read timeout over, if there is one and reading is on.
    private func restartReadTimer() {
        guard let readTimeout, readWanted, readArmed else {
            readTimer.suspend()
            return
        }
        readTimer.schedule(nanoseconds: readTimeout)
    }

    /// What one read readiness led to.
    enum ReadResult {
        /// Bytes were appended to the input.
        case bytes
        /// Nothing to do (spurious wake-up, or reading paused just now).
        case nothing
        /// The peer sent while reading was paused: the registration was dropped.
        case pausedWithData
        /// Reading stopped at the high watermark until the input is consumed.
        case suspended
        /// End of stream, or a read error.
        case ended(ConnectionEnd)
    }

    /// Reads once (called when the socket is readable).
    func read() -> ReadResult {
        guard readWanted else {
            disarmRead()
            return .pausedWithData
        }
        var room = readSize
        if highWatermark > 0 {
            room = min(room, highWatermark - evbuffer_get_length(input))
            if room <= 0 {
                suspend()
                return .suspended
            }
        }
        if let tls { return readTLS(tls, room: room) }
        var vector = iovec()  // evbuffer_iovec is iovec on Linux
        guard evbuffer_reserve_space(input, room, &vector, 1) == 1, let base = vector.iov_base else {
            return .nothing
        }
        let asked = min(room, vector.iov_len)
        let got = Glibc.read(fd, base, asked)
        if got > 0 {
            // A stream that fills what it is offered gets the large reads; a trickle, small ones.
            if got == asked { readSize = SocketChannel.maxRead } else if got < SocketChannel.firstRead { readSize = SocketChannel.firstRead }
            vector.iov_len = got
            evbuffer_commit_space(input, &vector, 1)
            if readTimeout != nil { restartReadTimer() }
            return .bytes
        }
        if got < 0 {
            let code = shim_errno()
            if code == EAGAIN || code == EWOULDBLOCK || code == EINTR { return .nothing }
            endReading()
            return .ended(.socketError(errno: code))
        }
        endReading()
        return .ended(.endOfStream)
    }

    /// ``read()`` through the TLS layer: the same sizes and timer, in plaintext bytes. (Out of
    /// line: the plain read stays as small as it was.)
    @inline(never)
    private func readTLS(_ tls: TLSLayer, room: Int) -> ReadResult {
        switch tls.read(into: input, room: room) {
        case .bytes(let got, let more):
            if tls.readWantsWrite { awaitWritableForRead() }
            guard got > 0 else { return .nothing }
            if got == room { readSize = SocketChannel.maxRead } else if got < SocketChannel.firstRead { readSize = SocketChannel.firstRead }
            if readTimeout != nil { restartReadTimer() }
            // Whole records beyond `room` (or an end) wait in OpenSSL: come back for them. Only
            // then: re-arming after every read would chain reads of one busy connection without
            // the loop polling anybody else.
            if more { readBufferedTLS() }
            return .bytes
        case .wantWrite:
            awaitWritableForRead()
            return .nothing
        case .ended(let reason):
            endReading()
            return .ended(reason)
        }
    }

    /// OpenSSL must write before it reads on: wait for writability, not readability (which
    /// would report the unread bytes again and again, each read failing the same way).
    private func awaitWritableForRead() {
        armWrite()
        disarmRead()
    }

    /// After the consumer had its turn: suspends if the input is still at the high watermark
    /// (saves a wake-up that would find no room).
    func suspendIfFull() {
        if highWatermark > 0 && evbuffer_get_length(input) >= highWatermark { suspend() }
    }

    private func suspend() {
        guard !suspendedByWatermark else { return }
        suspendedByWatermark = true
        disarmRead()
        if let inputWatch {
            evbuffer_cb_set_flags(input, inputWatch, UInt32(EVBUFFER_CB_ENABLED))
        } else {
            inputWatch = evbuffer_add_cb(input, socketInputTrampoline, context)
        }
    }

    /// The input changed (only watched while suspended): resumes below the high watermark.
    func inputChanged() {
        guard suspendedByWatermark, evbuffer_get_length(input) < highWatermark else { return }
        suspendedByWatermark = false
        if let inputWatch { evbuffer_cb_clear_flags(input, inputWatch, UInt32(EVBUFFER_CB_ENABLED)) }
        if readWanted && !readEnded {
            armRead()
            restartReadTimer()
            readBufferedTLS()
        }
    }

    /// Nothing more will be read (end of stream, error, timeout).
    func endReading() {
        readEnded = true
        disarmRead()
    }

    // MARK: - writing

    /// The owner asked for the output (to queue bytes, or to read its length): the connection
    /// goes on the loop's flush list, unless it is on it already, a write is waiting for the
    /// socket, or a connect for its completion. Whatever is queued by the time the loop flushes
    /// goes out then.
    ///
    /// Why not a libevent callback on the output (as before): it ran on every change of the
    /// buffer, drains included, five times per proxied request, for about 800 instructions with
    /// its trampolines; this is a few flag tests per request for the owner's accesses.
    @inline(__always)
    func outputRequested(by connection: SocketConnection) {
        guard !flushPending, !writeArmed, !connecting else { return }
        flushPending = true
        loop.scheduleFlush(connection)
    }

    /// What one write attempt led to.
    enum WriteResult {
        /// Everything queued is with the kernel.
        case drained
        /// Some bytes wait for the socket to become writable (write interest registered).
        case waiting
        /// The write failed; the output was discarded.
        case failed(ConnectionEnd)
    }

    /// Hands as much of the output to the kernel as it takes, in one `writev`.
    func write() -> WriteResult {
        write(length: evbuffer_get_length(output))
    }

    /// ``write()`` for an output of `length` bytes, known to the caller.
    func write(length: Int) -> WriteResult {
        if let tls { return writeTLS(tls) }
        // What was written says what is left: the length is read once per flush.
        if length > 0 {
            let written = evbuffer_write_atmost(output, fd, -1)
            if written != length {
                if written < 0 {
                    let code = shim_errno()
                    if code != EAGAIN && code != EWOULDBLOCK && code != EINTR {
                        disarmWrite()
                        evbuffer_drain(output, evbuffer_get_length(output))
                        return .failed(code == ECONNREFUSED ? .refused : .socketError(errno: code))
                    }
                }
                armWrite()
                return .waiting
            }
        }
        disarmWrite()
        return .drained
    }

    /// ``write()`` through the TLS layer. (Out of line, as ``readTLS(_:room:)``.)
    @inline(never)
    private func writeTLS(_ tls: TLSLayer) -> WriteResult {
        switch tls.write(from: output) {
        case .drained:
            disarmWrite()
            return .drained
        case .wantWrite:
            armWrite()
            return .waiting
        case .wantRead:
            // Readability writes again (the connection's read callback sees `writeWantsRead`).
            disarmWrite()
            if !readArmed { armRead() }
            return .waiting
        case .failed(let reason):
            disarmWrite()
            evbuffer_drain(output, evbuffer_get_length(output))
            return .failed(reason)
        }
    }

    // MARK: - the TLS handshake

    /// What a handshake turn led to, for the connection.
    enum HandshakeResult {
        /// Completed: the connection reports its connect and flushes what was queued.
        case done
        /// Waiting for the socket (the event it needs is registered).
        case waiting
        /// Failed: nothing more is read or written.
        case failed(ConnectionEnd)
    }

    /// Runs the TLS handshake as far as the socket allows, registering the event it waits for.
    func continueHandshake(_ tls: TLSLayer) -> HandshakeResult {
        switch tls.handshake() {
        case .done:
            disarmWrite()
            // Read interest follows what the owner wants from here on, as on any connection.
            if !readWanted { disarmRead() } else { restartReadTimer() }
            return .done
        case .wantRead:
            disarmWrite()
            if !readArmed { armRead() }
            return .waiting
        case .wantWrite:
            armWrite()
            return .waiting
        case .failed(let reason):
            endReading()
            disarmWrite()
            return .failed(reason)
        }
    }

    /// Waits for writability (a connected socket has it at once: the loop calls back in its
    /// next iteration).
    func awaitWritable() {
        armWrite()
    }

    /// A TLS server side waits for the client's first flight (the read event, from the loop).
    func awaitHandshake() {
        if !readArmed { armRead() }
    }

    private func armWrite() {
        guard !writeArmed else { return }
        withOptionalPointer(&writeTimeout) { _ = event_add(writeEvent, $0) }
        writeArmed = true
    }

    func disarmWrite() {
        guard writeArmed else { return }
        event_del(writeEvent)
        writeArmed = false
    }

    // MARK: - connecting

    /// Starts a non-blocking connect; the outcome arrives as a write readiness (also when the
    /// connect succeeded or failed at once, so the owner never hears it inside this call).
    func startConnect(to address: SocketAddress) {
        connecting = true
        let result = address.withSockaddr { sa, length in Glibc.connect(fd, sa, socklen_t(length)) }
        let code = result == 0 ? 0 : shim_errno()
        if code == EINPROGRESS {
            armWrite()
        } else {
            immediateConnectError = code
            event_active(writeEvent, Int32(EV_WRITE), 0)
        }
    }

    /// The connect completed: `nil` on success, else why it failed.
    func finishConnect() -> ConnectionEnd? {
        connecting = false
        disarmWrite()
        var code = immediateConnectError
        if code == 0 {
            var length = socklen_t(MemoryLayout<Int32>.size)
            if getsockopt(fd, SOL_SOCKET, SO_ERROR, &code, &length) != 0 { code = shim_errno() }
        }
        guard code != 0 else { return nil }
        endReading()
        return code == ECONNREFUSED ? .refused : .socketError(errno: code)
    }

    // MARK: - timeouts and closing

    /// Read timeout: no bytes for that long while reading is wanted. Write timeout: no progress
    /// for that long while bytes wait for the socket.
    func setTimeouts(read: Duration?, write: timeval?) {
        readTimeout = read.map(EventLoop.nanoseconds)
        writeTimeout = write
        restartReadTimer()
        if writeArmed && !connecting {
            if write != nil {
                withOptionalPointer(&writeTimeout) { _ = event_add(writeEvent, $0) }
            } else {
                event_remove_timer(writeEvent)
            }
        }
    }

    /// A read or write timeout fired: nothing more is read or written.
    func timedOut() {
        endReading()
        disarmWrite()
    }

    /// Frees the events and closes the socket (the connection drops the channel after this);
    /// `keepingDescriptor`: the socket stays open for a new owner (a TLS layer taking over).
    func close(keepingDescriptor: Bool = false) {
        readTimer.cancel()
        event_free(readEvent)
        event_free(writeEvent)
        if let inputWatch { evbuffer_remove_cb_entry(input, inputWatch) }
        inputWatch = nil
        tls?.free()
        if !keepingDescriptor { Glibc.close(fd) }
    }
}

/// Calls `body` with a pointer to the value, or with `nil` when there is none.
func withOptionalPointer<T, R>(_ value: inout T?, _ body: (UnsafePointer<T>?) -> R) -> R {
    if value != nil {
        return withUnsafePointer(to: &value!) { body($0) }
    }
    return body(nil)
}
