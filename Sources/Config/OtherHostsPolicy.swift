/// What the proxy does with a request whose destination matches no route.
public enum OtherHostsPolicy: String, Sendable, Hashable, CaseIterable {
    /// Refuse the request (the default): only configured destinations are reachable.
    case deny
    /// Forward the request unchanged, without injecting any credential.
    case forward
}
