import EventLoop

/// Where an upstream connection goes and how: the resolved form of a route's destination.
struct UpstreamTarget {
    /// Host name or numeric address to resolve and connect to.
    let host: String
    /// TCP port.
    let port: Int
    /// TLS settings when the upstream is `https://`.
    let tls: TLSClientContext?
    /// Connections are pooled (and counted against the per-upstream limit) by this key.
    let poolKey: String
    /// Whether link-local / metadata addresses are allowed: only when a route's `upstream`
    /// names the destination explicitly.
    let allowsLinkLocal: Bool
    /// The pool key's index among the configuration's distinct keys, numbered when it loaded
    /// (-1: a target made per request); lets the pool find the key without hashing it.
    var poolKeyIndex = -1
    /// The HTTP version its connections speak.
    var http: UpstreamHTTP = .http1
}

/// The HTTP version an upstream target's connections speak.
enum UpstreamHTTP: Equatable {
    /// HTTP/1.1, each connection carrying one exchange at a time.
    case http1
    /// HTTP/2 over TLS (ALPN `h2` required) or in plaintext with prior knowledge: connections
    /// shared by every exchange for the target (``HTTP2Upstreams``).
    case h2
    /// TLS offering ALPN `h2` and `http/1.1` (`upstreamProtocol: auto`): HTTP/2 as above once a
    /// connection agreed on `h2` (and for that target from then on), else HTTP/1.1.
    case negotiated
}

extension UpstreamTarget {
    /// The target an `auto` upstream that agreed on `h2` is reached as: HTTP/2 connections
    /// kept apart from its HTTP/1.1 ones.
    var asHTTP2: UpstreamTarget {
        var target = UpstreamTarget(host: host, port: port, tls: tls, poolKey: poolKey + "|h2", allowsLinkLocal: allowsLinkLocal)
        target.http = .h2
        return target
    }
}
