import Proxy

/// Connects the admin listener to a running sidecar (filled in with the Admin module).
enum AdminWiring {
    static func start(for sidecar: Sidecar) {}
}
