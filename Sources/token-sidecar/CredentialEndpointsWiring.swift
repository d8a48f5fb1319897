import Config
import CredentialEndpoints
import EventLoop
import TokenManager

/// Starts the `credentialEndpoints:` listener of a running sidecar, on its control loop, granting
/// each endpoint's credential from the running credentials (so a reload's new tokens and files
/// are what is handed out).
enum CredentialEndpointsWiring {
    /// Binds the listener and logs its address; a failure to bind is logged as an error.
    static func start(for sidecar: Sidecar) {
        guard let section = sidecar.config.credentialEndpoints else { return }
        let router = CredentialEndpointRouter(section, credentials: sidecar.config.credentials)
        do {
            let address = try SocketAddress(host: section.listen.host, port: section.listen.port)
            let server = try CredentialEndpointServer(address: address, loop: sidecar.control, router: router,
                                                      grants: { served, completion in grant(served, sidecar, completion) },
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

    /// What `served` hands out now: the credential's placeholder (or token, with `realTokens`)
    /// and its token's expiry, once it has a token; nil when it has none within its wait.
    private static func grant(_ served: ServedEndpoint, _ sidecar: Sidecar, _ completion: @escaping @Sendable (EndpointGrant?) -> Void) {
        let name = served.config.credential
        guard let credential = sidecar.runtime.credentials[name] else { return completion(nil) }
        let placeholder = sidecar.runtime.credentials.placeholders[name]
        let awsPlaceholder: String? = if case .aws(let aws)? = sidecar.config.credential(named: name)?.kind { aws.placeholderAccessKeyId } else { nil }
        let real = served.config.realTokens
        credential.waitForToken(on: sidecar.control, timeout: credential.tokenWait) { token in
            guard let token else { return completion(nil) }
            let expiresAt = token.expiresAt.map { WallClockConverter().seconds(at: $0) }
            if served.config.kind == .aws {
                let keys: EndpointGrant.AWSKeys?
                if real {
                    keys = token.aws.map { EndpointGrant.AWSKeys(accessKeyId: $0.accessKeyId, secretAccessKey: $0.secretAccessKey, sessionToken: $0.sessionToken) }
                } else {
                    keys = awsPlaceholder.map { EndpointGrant.AWSKeys(accessKeyId: $0, secretAccessKey: CredentialEndpointRouter.awsPlaceholderSecret,
                                                                     sessionToken: CredentialEndpointRouter.awsPlaceholderSessionToken) }
                }
                return completion(keys.map { EndpointGrant(token: "", expiresAt: expiresAt, aws: $0) })
            }
            guard let handed = real ? token.value : placeholder else { return completion(nil) }
            completion(EndpointGrant(token: handed, expiresAt: expiresAt))
        }
    }
}
