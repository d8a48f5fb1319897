import HTTPMessage

/// What the credential endpoints make of a request: an answer now (a refusal, a metadata
/// value), or a grant of a credential to word as the endpoint does once its token is looked up.
public enum EndpointDecision: Sendable {
    /// Answered without a token.
    case answer(LocalResponse)
    /// The endpoint's credential is granted, worded as `format`.
    case grant(ServedEndpoint, GrantFormat)
}
