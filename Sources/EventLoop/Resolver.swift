import CLibevent
import Glibc

/// A failed name resolution.
public struct ResolveError: Error, Sendable, Equatable, CustomStringConvertible {
    /// Whether the resolver gave up waiting (as opposed to a definite answer such as NXDOMAIN).
    public let timedOut: Bool
    /// The resolver's message.
    public let message: String
    /// The message.
    public var description: String { message }
}

extension EventLoop {
    /// Resolves `host` (A and AAAA, `/etc/hosts` honoured) asynchronously on this loop.
    /// `completion` always runs later on this loop's thread, never inside this call.
    public func resolve(host: String, port: Int, _ completion: @escaping (Result<[SocketAddress], ResolveError>) -> Void) {
        let request = ResolveRequest(loop: self, completion: completion)
        if let literal = try? SocketAddress(host: host, port: port) {
            request.deliverLater(.success([literal]))
            return
        }
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        hints.ai_protocol = Int32(IPPROTO_TCP)
        let context = Unmanaged.passRetained(request).toOpaque()
        request.inCall = true
        _ = evdns_getaddrinfo(resolver, host, String(port), &hints, resolveTrampoline, context)
        request.inCall = false
        if let early = request.early {
            request.deliverLater(early)
        }
    }
}

/// One pending resolution; retained by libevent's callback context until the answer comes.
final class ResolveRequest {
    let loop: EventLoop
    private var completion: ((Result<[SocketAddress], ResolveError>) -> Void)?
    var inCall = false
    var early: Result<[SocketAddress], ResolveError>?
    private var deferTimer: Timer?

    init(loop: EventLoop, completion: @escaping (Result<[SocketAddress], ResolveError>) -> Void) {
        self.loop = loop
        self.completion = completion
    }

    func answer(code: Int32, list: UnsafeMutablePointer<addrinfo>?) {
        var result: Result<[SocketAddress], ResolveError>
        if code != 0 {
            let message = String(cString: evutil_gai_strerror(code))
            result = .failure(ResolveError(timedOut: code == EVUTIL_EAI_AGAIN, message: message))
        } else {
            var addresses: [SocketAddress] = []
            var node = list
            while let current = node {
                if let sa = current.pointee.ai_addr, let address = SocketAddress(sockaddr: sa) {
                    addresses.append(address)
                }
                node = current.pointee.ai_next
            }
            result = addresses.isEmpty ? .failure(ResolveError(timedOut: false, message: "no addresses")) : .success(addresses)
        }
        if let list { evutil_freeaddrinfo(list) }
        if inCall { early = result } else { deliver(result) }
    }

    /// Delivers on the next loop iteration (keeps the caller's stack free of re-entry).
    func deliverLater(_ result: Result<[SocketAddress], ResolveError>) {
        deferTimer = Timer(on: loop, after: .zero) { [self] in deliver(result) }
    }

    private func deliver(_ result: Result<[SocketAddress], ResolveError>) {
        deferTimer = nil
        let completion = self.completion
        self.completion = nil
        completion?(result)
    }
}
