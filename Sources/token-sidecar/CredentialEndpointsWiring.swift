import Config
import CredentialEndpoints
import EventLoop
import TokenManager

/// Starts the `credentialEndpoints:` listener of a running sidecar, on its control loop, granting
/// each endpoint's credential from the running credentials (so a reload's new tokens and files
/// are what is handed out).
enum CredentialEndpointsWiring {
    /// Binds the listener and logs its address; a failure to bind is logged as an error and
    /// keeps `/readyz` failing (``notListening(_:)``).
    static func start(for sidecar: Sidecar) {
        guard let section = sidecar.config.credentialEndpoints else { return }
        let router = CredentialEndpointRouter(section, credentials: sidecar.config.credentials)
        let box = WeakSidecar(sidecar)
        do {
            let address = try SocketAddress(host: section.listen.host, port: section.listen.port)
            let server = try CredentialEndpointServer(address: address, loop: sidecar.control, router: router,
                                                      grants: { served, completion in
                                                          guard let sidecar = box.sidecar else { return completion(.unavailable("shutting down")) }
                                                          grant(served, sidecar, completion)
                                                      },
                                                      logger: sidecar.logger)
            sidecar.credentialEndpoints = server
            sidecar.logger.info("credential endpoints listening", metadata: [
                "address": "\(server.address)",
                "endpoints": .string(router.endpoints.map { "\($0.config.kind.rawValue) (\($0.config.credential))" }.joined(separator: ", ")),
            ])
            if !server.address.isLoopback {
                sidecar.logger.warning("credential endpoints listen beyond loopback (allowNonLoopback: true): whoever reaches \(server.address) gets their placeholders or tokens")
            }
        } catch {
            sidecar.logger.error("credential endpoints: cannot listen on \(section.listen): \(error)")
        }
    }

    /// After a reload: the endpoints and their credentials' facts as the new file says them
    /// (where they listen takes a restart).
    static func reload(_ sidecar: Sidecar) {
        guard let server = sidecar.credentialEndpoints, let section = sidecar.config.credentialEndpoints else { return }
        server.replace(router: CredentialEndpointRouter(section, credentials: sidecar.config.credentials))
    }

    /// Why `/readyz` fails: the endpoints are configured but do not listen.
    static func notListening(_ sidecar: Sidecar) -> String? {
        guard let section = sidecar.config.credentialEndpoints, sidecar.credentialEndpoints == nil else { return nil }
        return "credential endpoints: not listening on \(section.listen)"
    }

    /// What `served` hands out now: the credential's placeholder (or token, with `realTokens`)
    /// and its token's expiry, once it has a token.
    private static func grant(_ served: ServedEndpoint, _ sidecar: Sidecar,
                              _ completion: @escaping @Sendable (CredentialEndpointServer.GrantOutcome) -> Void) {
        let name = served.config.credential
        guard let credential = sidecar.runtime.credentials[name] else {
            return completion(.unavailable("credential \(name) is not configured"))
        }
        let placeholder = sidecar.runtime.credentials.placeholders[name]
        let awsPlaceholder: String? = if case .aws(let aws)? = sidecar.config.credential(named: name)?.kind { aws.placeholderAccessKeyId } else { nil }
        let real = served.config.realTokens
        credential.waitForToken(on: sidecar.control, timeout: credential.tokenWait) { token in
            guard let token else {
                return completion(.unavailable("credential \(name) has no token yet\(credential.refusal().map { " (its token endpoint refused: \($0))" } ?? ""); retry shortly"))
            }
            let expiresAt = token.expiresAt.map { WallClockConverter().seconds(at: $0) }
            if served.config.kind == .aws {
                let keys: EndpointGrant.AWSKeys?
                if real {
                    keys = token.aws.map { EndpointGrant.AWSKeys(accessKeyId: $0.accessKeyId, secretAccessKey: $0.secretAccessKey, sessionToken: $0.sessionToken) }
                } else {
                    keys = awsPlaceholder.map { EndpointGrant.AWSKeys(accessKeyId: $0, secretAccessKey: CredentialEndpointRouter.awsPlaceholderSecret,
                                                                     sessionToken: CredentialEndpointRouter.awsPlaceholderSessionToken) }
                }
                guard let keys else { return completion(.unavailable("credential \(name) holds no AWS keys")) }
                return completion(.granted(EndpointGrant(token: "", expiresAt: expiresAt, aws: keys)))
            }
            guard let handed = real ? token.value : placeholder else {
                return completion(.unavailable("credential \(name) has no placeholder"))
            }
            completion(.granted(EndpointGrant(token: handed, expiresAt: expiresAt)))
        }
    }
}

/// The sidecar, held weakly by the listener it owns (no cycle). Used on the control loop only.
private final class WeakSidecar: @unchecked Sendable {
    weak var sidecar: Sidecar?
    init(_ sidecar: Sidecar) { self.sidecar = sidecar }
}
