import HTTP1

/// The destination of an intercepted CONNECT tunnel: every request read inside it must be for
/// this host and port.
struct InterceptedOrigin: Equatable {
    /// The lowercased host name or IP literal (no brackets).
    let host: String
    /// The port the app connected to (443 unless it said otherwise).
    let port: Int

    init(_ authority: Authority) {
        host = authority.host
        port = authority.port(default: 443)
    }

    /// `host:port` (IPv6 bracketed).
    var description: String { Authority(host: host, port: port).description }
}
