/// The syntax of an HTTP field name in the configuration (RFC 9110 §5.1: a token).
enum FieldNameSyntax {
    /// Whether `name` is a non-empty RFC 9110 token (letters, digits and ``punctuation``).
    static func isToken(_ name: String) -> Bool {
        !name.isEmpty && name.unicodeScalars.allSatisfy { scalar in
            scalar.isASCII && (scalar.properties.isAlphabetic || ("0"..."9").contains(scalar) || punctuation.unicodeScalars.contains(scalar))
        }
    }

    /// The punctuation a token may hold, as messages name it.
    static let punctuation = "!#$%&'*+-.^_`|~"
}
