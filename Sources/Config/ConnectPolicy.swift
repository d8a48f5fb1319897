/// What the proxy does with `CONNECT` (tunnel) requests (`connect:`).
public enum ConnectPolicy: Sendable, Equatable {
    /// Refuse every `CONNECT` request (the default).
    case deny
    /// Tunnel only to these destinations: normalized `"host:port"` entries
    /// (lowercase, no trailing dot, IPv6 bracketed as `"[::1]:443"`), in file order.
    case allow([String])
}
