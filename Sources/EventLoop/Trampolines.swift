import CLibevent
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

func connectionReadTrampoline(_ bev: OpaquePointer?, _ ctx: UnsafeMutableRawPointer?) {
    guard let ctx else { return }
    Unmanaged<Connection>.fromOpaque(ctx).takeUnretainedValue().handleReadable()
}

func connectionWriteTrampoline(_ bev: OpaquePointer?, _ ctx: UnsafeMutableRawPointer?) {
    guard let ctx else { return }
    Unmanaged<Connection>.fromOpaque(ctx).takeUnretainedValue().handleWritable()
}

func connectionEventTrampoline(_ bev: OpaquePointer?, _ what: Int16, _ ctx: UnsafeMutableRawPointer?) {
    guard let ctx else { return }
    Unmanaged<Connection>.fromOpaque(ctx).takeUnretainedValue().handleEvent(Int32(what))
}

func listenerAcceptTrampoline(
    _ listener: OpaquePointer?, _ fd: Int32,
    _ address: UnsafeMutablePointer<sockaddr>?, _ length: Int32, _ ctx: UnsafeMutableRawPointer?
) {
    guard let ctx else { close(fd); return }
    Unmanaged<Listener>.fromOpaque(ctx).takeUnretainedValue().handleAccept(fd)
}

func timerTrampoline(_ fd: Int32, _ what: Int16, _ ctx: UnsafeMutableRawPointer?) {
    guard let ctx else { return }
    Unmanaged<Timer>.fromOpaque(ctx).takeUnretainedValue().fire()
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
