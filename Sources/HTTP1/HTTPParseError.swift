/// A protocol violation found while parsing an HTTP/1.1 message.
public enum HTTPParseError: Error, Sendable, Equatable, Hashable {
    /// The head did not end within the size limit. Maps to 431.
    case headTooLarge
    /// The head has more field lines than allowed. Maps to 431.
    case tooManyFields
    /// Any other syntax or framing violation. Maps to 400.
    ///
    /// The message is a short human-readable description. It never contains field values or
    /// other bytes from the message, since those may hold credentials.
    case invalid(String)

    /// The HTTP status a server should answer with: 431 for size limits, 400 otherwise.
    public var status: Int {
        switch self {
        case .headTooLarge, .tooManyFields: return 431
        case .invalid: return 400
        }
    }
}
