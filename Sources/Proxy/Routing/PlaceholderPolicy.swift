import HTTP1

/// Whether a request that carries credential placeholders may go on, and with which decision:
/// the placeholder of the route's own credential is swapped for its token
/// (``RouteDecision/swapping(placeholder:)``); any other — another credential's, one on a
/// route without a credential or on an unrouted host, or a `tsp_` value that is no
/// credential's — is refused with 403 before anything is sent or any token is fetched, so a
/// placeholder never reaches a host that may not have its secret (fail closed).
enum PlaceholderPolicy {
    /// The decision for `head` given what `scanner` finds in it.
    static func decide(_ head: RequestHead, _ decision: RouteDecision, scanner: PlaceholderScanner) -> Result<RouteDecision, ProxyError> {
        var route: String { decision.routeName.map { "route '\($0)'" } ?? "an unrouted destination" }
        switch scanner.scan(head) {
        case .none:
            return .success(decision)
        case .unknown:
            return .failure(.denied("the request carries a placeholder (tsp_…) that matches no credential; it is not forwarded"))
        case .several(let names):
            return .failure(.denied("the request carries the placeholders of credentials \(names.map { "'\($0)'" }.joined(separator: " and ")); \(route) may receive at most one"))
        case .undecodableBasic:
            return .failure(.denied("the request's Authorization: Basic value does not decode, so it cannot be checked for placeholders; it is not forwarded"))
        case .credential(let name, let placeholder, let places):
            guard let credential = decision.credential, credential.name == name else {
                return .failure(.denied("the request carries the placeholder of credential '\(name)', which \(route) may not receive; it is not forwarded"))
            }
            if decision.perRequest?.exchanges == true {
                return .failure(.denied("\(route) exchanges the app's own token; a placeholder is no token to exchange"))
            }
            if places > 1 && decision.injection?.placement == nil {
                return .failure(.denied("the placeholder of credential '\(name)' is in \(places) places of the request; swapped, the secret would reach the API \(places) times"))
            }
            return .success(decision.swapping(placeholder: placeholder))
        }
    }
}
