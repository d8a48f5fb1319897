/// `routes[].upstreamProtocol`: the HTTP version the sidecar speaks to a route's upstream.
public enum UpstreamProtocol: String, Sendable, Equatable, CaseIterable {
    /// HTTP/2 where the upstream agrees to it in TLS (ALPN `h2`, offered with `http/1.1`),
    /// HTTP/1.1 otherwise and to every `http://` upstream (the default).
    case auto
    /// HTTP/1.1 only (no ALPN offered).
    case http1
    /// HTTP/2 over TLS, required: an upstream that does not agree to `h2` in ALPN fails the
    /// request (502).
    case h2
    /// HTTP/2 in plaintext with prior knowledge (RFC 9113 §3.3), for `http://` upstreams such as
    /// a gRPC server.
    case h2c
}
