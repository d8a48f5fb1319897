/// `routes[].clientAuthorization`: what to do with an `Authorization` field the client sent on a
/// credentialed route.
public enum ClientAuthorizationPolicy: String, Sendable, Equatable, CaseIterable {
    /// Drop the client's `Authorization` and inject the credential's token (the default).
    case replace
    /// Forward a request that carries its own `Authorization` with exactly that header and inject
    /// nothing (the SDK's `getAuthorizationHeaderFromIncomingRequest`); inject the token only into
    /// requests without one.
    case keep
    /// Trade the client's bearer token (the subject) for a token of the route's credential
    /// (RFC 8693 token exchange, `routes[].exchange`); a request without one is refused (401).
    case exchange
}
