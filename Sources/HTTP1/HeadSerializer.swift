/// Writes message heads and chunk headers as bytes.
///
/// No validation happens here: names, values, methods and targets are written verbatim, so
/// callers must only pass parsed (already validated) or program-generated text that contains
/// no CR/LF.
public enum HeadSerializer {
    /// `"METHOD target HTTP/1.1\r\n"`, then `"Name: value\r\n"` per field, then `"\r\n"`.
    public static func request(method: String, target: String, version: HTTPVersion, fields: HTTPFields) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(method.utf8.count + target.utf8.count + 12 + fieldsSize(fields))
        out.append(contentsOf: method.utf8)
        out.append(ASCII.sp)
        out.append(contentsOf: target.utf8)
        out.append(ASCII.sp)
        appendVersion(version, to: &out)
        appendCRLF(to: &out)
        appendFields(fields, to: &out)
        return out
    }

    /// `"HTTP/1.1 200 OK\r\n"`, fields, `"\r\n"`. An empty reason still gets the SP after the
    /// status code (`"HTTP/1.1 200 \r\n"`), as the status-line grammar requires (RFC 9112 §4).
    /// - Precondition: `status` is in 100...999.
    public static func response(version: HTTPVersion, status: Int, reason: String, fields: HTTPFields) -> [UInt8] {
        precondition((100...999).contains(status), "status code must have three digits")
        var out: [UInt8] = []
        out.reserveCapacity(15 + reason.utf8.count + fieldsSize(fields))
        appendVersion(version, to: &out)
        out.append(ASCII.sp)
        out.append(UInt8(0x30 + status / 100))
        out.append(UInt8(0x30 + status / 10 % 10))
        out.append(UInt8(0x30 + status % 10))
        out.append(ASCII.sp)
        out.append(contentsOf: reason.utf8)
        appendCRLF(to: &out)
        appendFields(fields, to: &out)
        return out
    }

    /// The standard reason phrase for common status codes (RFC 9110 §15), "" if unknown.
    public static func reasonPhrase(_ status: Int) -> String {
        switch status {
        case 100: return "Continue"
        case 101: return "Switching Protocols"
        case 200: return "OK"
        case 201: return "Created"
        case 202: return "Accepted"
        case 203: return "Non-Authoritative Information"
        case 204: return "No Content"
        case 205: return "Reset Content"
        case 206: return "Partial Content"
        case 300: return "Multiple Choices"
        case 301: return "Moved Permanently"
        case 302: return "Found"
        case 303: return "See Other"
        case 304: return "Not Modified"
        case 307: return "Temporary Redirect"
        case 308: return "Permanent Redirect"
        case 400: return "Bad Request"
        case 401: return "Unauthorized"
        case 402: return "Payment Required"
        case 403: return "Forbidden"
        case 404: return "Not Found"
        case 405: return "Method Not Allowed"
        case 406: return "Not Acceptable"
        case 407: return "Proxy Authentication Required"
        case 408: return "Request Timeout"
        case 409: return "Conflict"
        case 410: return "Gone"
        case 411: return "Length Required"
        case 412: return "Precondition Failed"
        case 413: return "Content Too Large"
        case 414: return "URI Too Long"
        case 415: return "Unsupported Media Type"
        case 416: return "Range Not Satisfiable"
        case 417: return "Expectation Failed"
        case 421: return "Misdirected Request"
        case 422: return "Unprocessable Content"
        case 426: return "Upgrade Required"
        case 428: return "Precondition Required"
        case 429: return "Too Many Requests"
        case 431: return "Request Header Fields Too Large"
        case 500: return "Internal Server Error"
        case 501: return "Not Implemented"
        case 502: return "Bad Gateway"
        case 503: return "Service Unavailable"
        case 504: return "Gateway Timeout"
        case 505: return "HTTP Version Not Supported"
        default: return ""
        }
    }

    /// `"1a2b\r\n"`: the chunk-size line for a chunk of `size` bytes, lowercase hex, no
    /// extensions. `chunkHeader(0)` gives the last-chunk line `"0\r\n"`; the caller appends
    /// the (empty) trailer section's final `"\r\n"`.
    /// - Precondition: `size >= 0`.
    public static func chunkHeader(_ size: Int) -> [UInt8] {
        precondition(size >= 0, "chunk size must not be negative")
        var digits = 1
        while digits < 16, size >> (4 * digits) != 0 { digits += 1 }
        var out = [UInt8](repeating: 0, count: digits + 2)
        var value = size
        for index in stride(from: digits - 1, through: 0, by: -1) {
            let nibble = UInt8(value & 0xF)
            out[index] = nibble < 10 ? 0x30 + nibble : 0x61 + nibble - 10
            value >>= 4
        }
        out[digits] = ASCII.cr
        out[digits + 1] = ASCII.lf
        return out
    }

    /// The last chunk (`"0\r\n"`), `trailers` and the empty line that ends them.
    public static func lastChunk(trailers: HTTPFields) -> [UInt8] {
        var out: [UInt8] = [0x30, ASCII.cr, ASCII.lf]
        appendFields(trailers, to: &out)
        return out
    }

    private static func fieldsSize(_ fields: HTTPFields) -> Int {
        var size = 2
        for field in fields.fields { size += field.name.utf8.count + field.value.utf8.count + 4 }
        return size
    }

    private static func appendVersion(_ version: HTTPVersion, to out: inout [UInt8]) {
        out.append(contentsOf: [0x48, 0x54, 0x54, 0x50, 0x2F, 0x31, 0x2E])  // "HTTP/1."
        out.append(version == .http1_1 ? 0x31 : 0x30)
    }

    private static func appendCRLF(to out: inout [UInt8]) {
        out.append(ASCII.cr)
        out.append(ASCII.lf)
    }

    private static func appendFields(_ fields: HTTPFields, to out: inout [UInt8]) {
        for field in fields.fields {
            out.append(contentsOf: field.name.utf8)
            out.append(ASCII.colon)
            out.append(ASCII.sp)
            out.append(contentsOf: field.value.utf8)
            appendCRLF(to: &out)
        }
        appendCRLF(to: &out)
    }
}
