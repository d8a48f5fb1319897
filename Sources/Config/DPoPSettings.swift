/// An `oauth2` credential's `dpop` setting (RFC 9449): where the key its tokens are bound to
/// comes from.
public enum DPoPSettings: Sendable, Equatable {
    /// `dpop: true`: a P-256 key generated at start, held only in memory.
    case generated
    /// `dpop: {keyFile: PATH}` (resolved path): a PEM key (EC P-256 or RSA ≥ 2048), re-read
    /// when it changes.
    case keyFile(String)
}
