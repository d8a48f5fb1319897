import CLibevent
import COpenSSL
import Glibc

// Every C callback of the module lives in this file. Each one captures nothing (so it converts to
// `@convention(c)`), turns its `ctx` back into the one Swift object that owns the C handle, and
// calls a plain Swift method. The objects are retained by their owners while their handle exists;
// `takeUnretainedValue()` yields a strong reference for the duration of the callback, so an owner
// that closes the handle inside the callback cannot free the object under our feet.

func eventLoopWakeTrampoline(_ fd: Int32, _ what: Int16, _ ctx: UnsafeMutableRawPointer?) {
    guard let ctx else { return }
    Unmanaged<EventLoop>.fromOpaque(ctx).takeUnretainedValue().drainPending()
}

func bufferEventReadTrampoline(_ bev: OpaquePointer?, _ ctx: UnsafeMutableRawPointer?) {
    guard let ctx else { return }
    Unmanaged<BufferEventConnection>.fromOpaque(ctx).takeUnretainedValue().bufferEventReadable()
}

func bufferEventWriteTrampoline(_ bev: OpaquePointer?, _ ctx: UnsafeMutableRawPointer?) {
    guard let ctx else { return }
    Unmanaged<BufferEventConnection>.fromOpaque(ctx).takeUnretainedValue().bufferEventWritable()
}

func bufferEventEventTrampoline(_ bev: OpaquePointer?, _ what: Int16, _ ctx: UnsafeMutableRawPointer?) {
    guard let ctx else { return }
    Unmanaged<BufferEventConnection>.fromOpaque(ctx).takeUnretainedValue().bufferEventEvent(Int32(what))
}

func listenerAcceptTrampoline(
    _ listener: OpaquePointer?, _ fd: Int32,
    _ address: UnsafeMutablePointer<sockaddr>?, _ length: Int32, _ ctx: UnsafeMutableRawPointer?
) {
    guard let ctx else { close(fd); return }
    Unmanaged<Listener>.fromOpaque(ctx).takeUnretainedValue().handleAccept(fd)
}

func listenerErrorTrampoline(_ listener: OpaquePointer?, _ ctx: UnsafeMutableRawPointer?) {
    // First thing: libevent calls this right after the failed accept, and errno still holds its
    // reason; any later library call could overwrite it.
    let code = shim_errno()
    guard let ctx else { return }
    Unmanaged<Listener>.fromOpaque(ctx).takeUnretainedValue().handleAcceptError(code)
}

/// libevent's log callback carries no context pointer: it forwards to the handler installed by
/// ``LibeventDiagnostics/install(_:)`` (a global set once before any loop starts).
func libeventLogTrampoline(_ severity: Int32, _ message: UnsafePointer<CChar>?) {
    guard let handler = libeventDiagnosticHandler else { return }
    handler(LibeventDiagnostics.severity(severity), message.map { String(cString: $0) } ?? "")
}

func timerTrampoline(_ fd: Int32, _ what: Int16, _ ctx: UnsafeMutableRawPointer?) {
    guard let ctx else { return }
    Unmanaged<Timer>.fromOpaque(ctx).takeUnretainedValue().fire()
}

func loopTaskTrampoline(_ fd: Int32, _ what: Int16, _ ctx: UnsafeMutableRawPointer?) {
    guard let ctx else { return }
    Unmanaged<LoopTask>.fromOpaque(ctx).takeUnretainedValue().fire()
}

func signalTrampoline(_ fd: Int32, _ what: Int16, _ ctx: UnsafeMutableRawPointer?) {
    guard let ctx else { return }
    Unmanaged<SignalWatcher>.fromOpaque(ctx).takeUnretainedValue().fire()
}

func resolveTrampoline(_ result: Int32, _ list: UnsafeMutablePointer<addrinfo>?, _ ctx: UnsafeMutableRawPointer?) {
    guard let ctx else { return }
    // Balances the passRetained in EventLoop.resolve: libevent calls back exactly once.
    Unmanaged<ResolveRequest>.fromOpaque(ctx).takeRetainedValue().answer(code: result, list: list)
}

func socketReadTrampoline(_ fd: Int32, _ what: Int16, _ ctx: UnsafeMutableRawPointer?) {
    guard let ctx else { return }
    let connection = Unmanaged<SocketConnection>.fromOpaque(ctx).takeUnretainedValue()
    // The loop outlives its connections (the connection may close in the callback): borrowed.
    Unmanaged.passUnretained(connection.loop)._withUnsafeGuaranteedRef { loop in
        loop.dispatchRead { connection.socketReadable(what) }
    }
}

func socketWriteTrampoline(_ fd: Int32, _ what: Int16, _ ctx: UnsafeMutableRawPointer?) {
    guard let ctx else { return }
    Unmanaged<SocketConnection>.fromOpaque(ctx).takeUnretainedValue().socketWritable(what)
}

func socketInputTrampoline(_ buffer: OpaquePointer?, _ info: UnsafePointer<evbuffer_cb_info>?, _ ctx: UnsafeMutableRawPointer?) {
    guard let ctx else { return }
    let connection = Unmanaged<SocketConnection>.fromOpaque(ctx).takeUnretainedValue()
    if connection.isOpen { connection.channel.inputChanged() }
}

func loopReadEndTrampoline(_ fd: Int32, _ what: Int16, _ ctx: UnsafeMutableRawPointer?) {
    guard let ctx else { return }
    Unmanaged<EventLoop>.fromOpaque(ctx).takeUnretainedValue().runReadEndTasksLater()
}

func loopFlushTrampoline(_ fd: Int32, _ what: Int16, _ ctx: UnsafeMutableRawPointer?) {
    guard let ctx else { return }
    Unmanaged<EventLoop>.fromOpaque(ctx).takeUnretainedValue().runFlushes()
}

func handshakeRefillTrampoline(_ fd: Int32, _ what: Int16, _ ctx: UnsafeMutableRawPointer?) {
    guard let ctx else { return }
    Unmanaged<EventLoop>.fromOpaque(ctx).takeUnretainedValue().refillHandshakeTurns()
}

/// OpenSSL's new-session callback (any worker thread): keeps the session for its peer. Returns
/// 1 when the reference was taken over, 0 to let OpenSSL release it.
func tlsNewSessionTrampoline(_ ssl: OpaquePointer?, _ session: OpaquePointer?) -> Int32 {
    guard let ssl, let session, let slot = SSL_get_ex_data(ssl, 0) else { return 0 }
    Unmanaged<TLSSessionSlot>.fromOpaque(slot).takeUnretainedValue().store(session)
    return 1
}

/// The ALPN protocol ids the TLS server side accepts.
private let alpnHTTP11: [UInt8] = Array("http/1.1".utf8)
private let alpnH2: [UInt8] = Array("h2".utf8)

/// OpenSSL's ALPN callback on the server side (any worker thread): selects `h2` when the
/// context offers it (`ctx` non-nil) and the client does, else `http/1.1` when the client offers
/// it; otherwise no ALPN at all (`SSL_TLSEXT_ERR_NOACK`), so a client without ALPN still
/// connects. `output` points into `offered`, which OpenSSL keeps alive for the handshake.
func tlsALPNSelectTrampoline(
    _ ssl: OpaquePointer?, _ output: UnsafeMutablePointer<UnsafePointer<UInt8>?>?, _ outputLength: UnsafeMutablePointer<UInt8>?,
    _ offered: UnsafePointer<UInt8>?, _ offeredLength: UInt32, _ ctx: UnsafeMutableRawPointer?
) -> Int32 {
    guard let output, let outputLength, let offered else { return SSL_TLSEXT_ERR_NOACK }
    let list = UnsafeBufferPointer(start: offered, count: Int(offeredLength))
    for wanted in ctx == nil ? [alpnHTTP11] : [alpnH2, alpnHTTP11] {
        var index = 0
        while index < list.count {
            let length = Int(list[index])
            let start = index + 1
            guard start + length <= list.count else { break }
            if length == wanted.count, list[start..<start + length].elementsEqual(wanted) {
                output.pointee = offered + start
                outputLength.pointee = UInt8(length)
                return SSL_TLSEXT_ERR_OK
            }
            index = start + length
        }
    }
    return SSL_TLSEXT_ERR_NOACK
}
