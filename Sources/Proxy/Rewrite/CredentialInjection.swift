import Config

/// How a request gets its credential when that is not the default `Authorization: Bearer`
/// line: the route's placement (`inject:`), and the placeholder the request carries in place
/// of the token, if any. A decision without one (nil) takes the default path, which never
/// looks at either. What does not depend on the token is prepared once, when the route is.
final class CredentialInjection: Sendable {
    /// Where the route puts the token; nil: the default place (`Authorization`).
    let placement: CredentialPlacement?
    /// The placeholder of the route's credential this request carries, found by
    /// ``PlaceholderScanner``; the edit swaps it for the token (nil: none in this request).
    let placeholder: [UInt8]?
    /// The field a header or Basic placement writes, lowercase (for removing the app's own).
    let field: [UInt8]?
    /// That field's name as the configuration spells it (how it is written).
    let fieldSpelling: [UInt8]
    /// Whether the placement writes `Authorization` (a Basic one, or a header one of that name).
    let writesAuthorization: Bool
    /// A header placement's text before and after the token; a Basic placement's `Basic `.
    let prefix: [UInt8]
    let suffix: [UInt8]
    /// A query placement's parameter.
    let queryName: String?
    /// What the access log, traces and metrics call it: the placement's label, or `placeholder`
    /// when the token went where the app put the placeholder (made once, not per request).
    let label: String

    /// An injection; at least one of the two is set.
    init(placement: CredentialPlacement?, placeholder: [UInt8]? = nil) {
        self.placement = placement
        self.placeholder = placeholder
        label = placement?.label ?? (placeholder == nil ? CredentialPlacement.defaultLabel : "placeholder")
        field = placement?.fieldName.map { Array($0.utf8) }
        writesAuthorization = placement?.fieldName == "authorization"
        switch placement {
        case .header(let name, let prefix, let suffix)?:
            fieldSpelling = Array(name.utf8)
            self.prefix = Array(prefix.utf8)
            self.suffix = Array(suffix.utf8)
            queryName = nil
        case .sigv4?:
            fieldSpelling = Array("Authorization".utf8)
            prefix = []
            suffix = []
            queryName = nil
        case .basic?:
            fieldSpelling = Array("Authorization".utf8)
            prefix = Array("Basic ".utf8)
            suffix = []
            queryName = nil
        case .query(let name)?:
            fieldSpelling = []
            prefix = []
            suffix = []
            queryName = name
        case nil:
            fieldSpelling = []
            prefix = []
            suffix = []
            queryName = nil
        }
    }

    /// This injection for a request carrying `placeholder`.
    func carrying(_ placeholder: [UInt8]) -> CredentialInjection {
        CredentialInjection(placement: placement, placeholder: placeholder)
    }
}
