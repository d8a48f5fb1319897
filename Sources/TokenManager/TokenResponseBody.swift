import Foundation

/// The fields of a token endpoint's JSON body that matter, decoded leniently: a field with an
/// unexpected type is recorded as such instead of failing the whole document.
struct TokenResponseBody: Decodable {
    /// A JSON value that should be a string.
    enum Text: Equatable {
        case absent
        case string(String)
        case wrongType
    }

    /// `expires_in`: a number, a numeric string, or something else.
    enum Lifetime: Equatable {
        case absent
        case seconds(Double)
        case invalid
    }

    var accessToken = Text.absent
    var idToken = Text.absent
    var refreshToken = Text.absent
    var tokenType = Text.absent
    var expiresIn = Lifetime.absent
    var error = Text.absent
    var errorDescription = Text.absent

    private enum Key: String, CodingKey {
        case accessToken = "access_token"
        case idToken = "id_token"
        case refreshToken = "refresh_token"
        case tokenType = "token_type"
        case expiresIn = "expires_in"
        case error
        case errorDescription = "error_description"
    }

    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: Key.self)
        accessToken = TokenResponseBody.text(container, .accessToken)
        idToken = TokenResponseBody.text(container, .idToken)
        refreshToken = TokenResponseBody.text(container, .refreshToken)
        tokenType = TokenResponseBody.text(container, .tokenType)
        error = TokenResponseBody.text(container, .error)
        errorDescription = TokenResponseBody.text(container, .errorDescription)
        if !container.contains(.expiresIn) || (try? container.decodeNil(forKey: .expiresIn)) == true {
            expiresIn = .absent
        } else if let number = try? container.decode(Double.self, forKey: .expiresIn) {
            expiresIn = .seconds(number)
        } else if let string = try? container.decode(String.self, forKey: .expiresIn),
                  let number = Double(string.trimmingCharacters(in: .whitespaces)) {
            expiresIn = .seconds(number)
        } else {
            expiresIn = .invalid
        }
    }

    private static func text(_ container: KeyedDecodingContainer<Key>, _ key: Key) -> Text {
        guard container.contains(key), (try? container.decodeNil(forKey: key)) != true else { return .absent }
        if let value = try? container.decode(String.self, forKey: key) { return .string(value) }
        return .wrongType
    }

    /// Decodes `bytes` as a JSON object; nil if it is not one.
    static func decode(_ bytes: [UInt8]) -> TokenResponseBody? {
        try? JSONDecoder().decode(TokenResponseBody.self, from: Data(bytes))
    }
}
