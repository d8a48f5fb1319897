/// The address the proxy listens on: a host (IP literal or name) and a port.
public struct ListenAddress: Sendable, Hashable, CustomStringConvertible {
    /// The host to bind, IPv6 without brackets (e.g. `"::1"`).
    public var host: String
    /// The TCP port, 0...65535; 0 asks the OS for an ephemeral port (tests).
    public var port: Int

    /// Creates an address from parts.
    public init(host: String, port: Int) {
        self.host = host
        self.port = port
    }

    /// `127.0.0.1:8080`, the default.
    public static let `default` = ListenAddress(host: "127.0.0.1", port: 8080)

    /// `"127.0.0.1:8080"`, or `"[::1]:8080"` for IPv6.
    public var description: String {
        "\(HostSyntax.bracketed(host)):\(port)"
    }

    /// Parses `host:port` (IPv6 as `[::1]:8080`). The port is required.
    public static func parse(_ text: String) -> Result<ListenAddress, AddressError> {
        let parts: (host: Substring, isIPv6: Bool, port: Substring?)
        switch HostSyntax.splitHostPort(Substring(text)) {
        case .success(let value): parts = value
        case .failure(let error): return .failure(error)
        }
        guard let portText = parts.port else {
            return .failure(AddressError("expected host:port, e.g. 127.0.0.1:8080"))
        }
        if parts.host.isEmpty {
            return .failure(AddressError("missing host before ':' (use 0.0.0.0:\(portText) to listen on all interfaces)"))
        }
        guard let port = HostSyntax.parsePort(portText, range: 0...65535) else {
            return .failure(AddressError("invalid port '\(portText)': expected a number from 0 to 65535"))
        }
        if !parts.isIPv6, let problem = HostSyntax.checkName(parts.host) {
            return .failure(AddressError(problem))
        }
        return .success(ListenAddress(host: String(parts.host).lowercased(), port: port))
    }
}
