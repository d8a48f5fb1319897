/// A token endpoint that cannot be described (bad URL or missing setting).
public enum TokenEndpointError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The URL is not an absolute `http://` or `https://` URL this client can use; the message says why.
    case invalidURL(String)
    /// A required setting is empty; the associated value names it.
    case missingSetting(String)

    /// A message for a person (never contains a secret).
    public var description: String {
        switch self {
        case .invalidURL(let why): return "invalid token endpoint URL: \(why)"
        case .missingSetting(let name): return "token endpoint setting \(name) must not be empty"
        }
    }
}
