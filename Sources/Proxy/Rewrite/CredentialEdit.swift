import Config
import HTTP1
import TokenManager

/// Puts a token into a request head where a ``CredentialInjection`` says, before the
/// ``RequestRewriter`` writes the head for either protocol (it then adds no `Authorization`
/// line of its own and removes none): the one step in which a placement and a placeholder
/// swap change a request, the same for HTTP/1.1 and HTTP/2.
///
/// The token goes exactly once:
/// - with a placement (`inject:`), the app's own value at that place is removed and the token
///   written there; any other field or query parameter carrying the placeholder is removed
///   (the operator's placement is the one place the API reads);
/// - without one, the placeholder is swapped for the token wherever the app sent it (a field
///   value, inside `Authorization: Bearer …` or a Basic pair, a query parameter), and any
///   `Authorization` without it is removed, as the default placement removes the app's own.
enum CredentialEdit {
    /// The head with `token` placed per `injection`.
    static func apply(_ request: RequestHead, _ injection: CredentialInjection, token: String) -> RequestHead {
        let placement = injection.placement
        // A SigV4 route's head was signed as it was sent (``ExchangeSession/signHead(_:_:body:)``).
        if case .sigv4? = placement { return request }
        let placeholder = injection.placeholder
        let tokenBytes = Array(token.utf8)
        var target = request.target
        if injection.queryName != nil || placeholder != nil {
            switch target {
            case .origin(let path):
                target = .origin(editedPath(path, injection: injection, token: token))
            case .absolute(let scheme, let authority, let path):
                target = .absolute(scheme: scheme, authority: authority, path: editedPath(path, injection: injection, token: token))
            case .authority, .asterisk:
                break
            }
        }
        return request.edited(target: target) { section, out in
            for line in section.lines {
                let name = UnsafeRawBufferPointer(rebasing: section.bytes[line.name])
                let value = section.value(of: line)
                let isAuthorization = section.name(of: line, equals: "authorization")
                if isAuthorization || section.name(of: line, equals: "dpop") {
                    // The default place: the app's own goes, unless (without a placement) it
                    // carries the placeholder, which is swapped there.
                    if placement == nil {
                        if isAuthorization, let placeholder, let swapped = swapped(value, placeholder: placeholder, token: tokenBytes) {
                            swapped.withUnsafeBytes { out.append(name: name, value: $0) }
                        }
                        continue
                    }
                    if injection.writesAuthorization { continue }
                }
                if let field = injection.field, name.count == field.count, name.lazy.map(ASCIICase.lower).elementsEqual(field) {
                    continue
                }
                if let placeholder, ByteSearch.find(placeholder, in: value) != nil {
                    if placement == nil {
                        ByteSearch.replacing(placeholder, with: tokenBytes, in: value).withUnsafeBytes { out.append(name: name, value: $0) }
                    }
                    continue
                }
                out.copy(line, from: section)
            }
            switch placement {
            case .header?:
                out.append(name: injection.fieldSpelling, value: injection.prefix + tokenBytes + injection.suffix)
            case .basic(let form)?:
                out.append(name: injection.fieldSpelling, value: injection.prefix + Array(Base64.encode(Array(form.userPass(token: token).utf8)).utf8))
            case .query?, .sigv4?, nil:
                break
            }
        }
    }

    /// `path` with the query edited: a query placement's parameter (the app's removed, the
    /// token's appended, percent-encoded), and the placeholder swapped in (no placement) or its
    /// parameter removed (a placement elsewhere).
    static func editedPath(_ path: String, injection: CredentialInjection, token: String) -> String {
        let queryName = injection.queryName, placeholder = injection.placeholder, placement = injection.placement
        guard queryName != nil || placeholder.map({ path.utf8.count >= $0.count }) == true else { return path }
        let parts = path.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false)
        var parameters: [Substring] = parts.count > 1 ? parts[1].split(separator: "&", omittingEmptySubsequences: false) : []
        let encoded = FormURLEncoding.encode(token)
        var changed = false
        parameters = parameters.compactMap { parameter in
            let name = parameter.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)[0]
            if let queryName, name == queryName {
                changed = true
                return nil
            }
            guard let placeholder else { return parameter }
            let bytes = Array(parameter.utf8)
            guard bytes.withUnsafeBytes({ ByteSearch.find(placeholder, in: $0) != nil }) else { return parameter }
            changed = true
            if placement != nil { return nil }
            return Substring(decoding: bytes.withUnsafeBytes { ByteSearch.replacing(placeholder, with: Array(encoded.utf8), in: $0) },
                             as: UTF8.self)
        }
        if let queryName {
            parameters.append(Substring(queryName + "=" + encoded))
            changed = true
        }
        guard changed else { return path }
        let query = parameters.joined(separator: "&")
        return query.isEmpty ? String(parts[0]) : parts[0] + "?" + query
    }

    /// An `Authorization` value with the placeholder swapped: in the value itself (`Bearer
    /// <placeholder>`) or inside a Basic pair, decoded and encoded again; nil without it.
    private static func swapped(_ value: UnsafeRawBufferPointer, placeholder: [UInt8], token: [UInt8]) -> [UInt8]? {
        if ByteSearch.find(placeholder, in: value) != nil { return ByteSearch.replacing(placeholder, with: token, in: value) }
        guard let pair = PlaceholderScanner.basicPair(value), pair.withUnsafeBytes({ ByteSearch.find(placeholder, in: $0) != nil }) else {
            return nil
        }
        let real = pair.withUnsafeBytes { ByteSearch.replacing(placeholder, with: token, in: $0) }
        return Array(("Basic " + Base64.encode(real)).utf8)
    }
}
