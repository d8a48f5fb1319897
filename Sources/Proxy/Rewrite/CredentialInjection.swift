import Config

/// How a request gets its credential when that is not the default `Authorization: Bearer`
/// line: the route's placement (`inject:`), and the placeholder the request carries in place
/// of the token, if any. A decision without one (nil) takes the default path, which never
/// looks at either.
final class CredentialInjection: Sendable {
    /// Where the route puts the token; nil: the default place (`Authorization`).
    let placement: CredentialPlacement?
    /// The placeholder of the route's credential this request carries, found by
    /// ``PlaceholderScanner``; the edit swaps it for the token (nil: none in this request).
    let placeholder: [UInt8]?

    /// An injection; at least one of the two is set.
    init(placement: CredentialPlacement?, placeholder: [UInt8]? = nil) {
        self.placement = placement
        self.placeholder = placeholder
    }

    /// What the access log, traces and metrics call it: the placement's label, or `placeholder`
    /// when the token went where the app put the placeholder.
    var label: String {
        if let placement { return placement.label }
        return placeholder == nil ? CredentialPlacement.defaultLabel : "placeholder"
    }
}
