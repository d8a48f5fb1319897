import Foundation
import TestSupport

/// A request as a ``MemoryStream`` backend took it: the request line's parts, the header
/// fields as sent, the body de-chunked.
struct MemoryRequest {
    var method: String
    var target: String
    var headers: [(name: String, value: String)]
    var body: [UInt8]

    /// Every value of the header field `name` (compared case-insensitively), in order.
    func headers(_ name: String) -> [String] {
        headers.filter { $0.name.lowercased() == name.lowercased() }.map(\.value)
    }
}

/// Reads the HTTP/1.1 messages a test's peer took off a ``MemoryStream`` (``MemoryStream/readAll()``,
/// ``MemoryStream/peerReads(max:)``) into the shapes the socket tests assert on: responses as
/// ``TestResponse`` (as ``RawClient`` reads them), requests as ``MemoryRequest``. Deliberately
/// simple and independent of the proxy's own parser: bodies framed by Content-Length, chunked
/// (de-chunked), or — for responses — by the end of the text.
enum MemoryMessages {
    /// Every response in `text`, in order (a response without framing takes the rest).
    static func responses(_ text: String) -> [TestResponse] {
        var rest = Array(text.utf8)[...]
        var result: [TestResponse] = []
        while let (line, headers) = head(&rest) {
            let status = Int(line.split(separator: " ").dropFirst().first ?? "") ?? 0
            let body: [UInt8]
            if status < 200 || status == 204 || status == 304 {
                body = []
            } else {
                body = Self.body(&rest, headers: headers, untilEnd: true)
            }
            result.append(TestResponse(status: status, headers: headers, body: body))
        }
        return result
    }

    /// The only response in `text` (a test failure if there is none).
    static func response(_ text: String) -> TestResponse {
        responses(text).first ?? TestResponse(status: 0, headers: [], body: Array(text.utf8))
    }

    /// Every request in `bytes`, in order (a request without framing has no body).
    static func requests(_ bytes: [UInt8]) -> [MemoryRequest] {
        var rest = bytes[...]
        var result: [MemoryRequest] = []
        while let (line, headers) = head(&rest) {
            let parts = line.split(separator: " ", maxSplits: 2).map(String.init)
            guard parts.count == 3 else { break }
            result.append(MemoryRequest(method: parts[0], target: parts[1], headers: headers,
                                        body: body(&rest, headers: headers, untilEnd: false)))
        }
        return result
    }

    /// Takes a head (start line and fields) off `rest`, or nil when no complete head is left.
    private static func head(_ rest: inout ArraySlice<UInt8>) -> (line: String, headers: [(name: String, value: String)])? {
        guard let end = rest.firstRange(of: Array("\r\n\r\n".utf8)) else { return nil }
        let text = String(decoding: rest[rest.startIndex..<end.lowerBound], as: UTF8.self)
        rest = rest[end.upperBound...]
        var lines = text.components(separatedBy: "\r\n")
        let line = lines.removeFirst()
        let headers = lines.map { field -> (name: String, value: String) in
            let colon = field.firstIndex(of: ":") ?? field.endIndex
            let value = colon < field.endIndex ? field[field.index(after: colon)...] : ""
            return (String(field[..<colon]), value.trimmingCharacters(in: CharacterSet(charactersIn: " \t")))
        }
        return (line, headers)
    }

    /// Takes a body framed as `headers` say off `rest`.
    private static func body(_ rest: inout ArraySlice<UInt8>, headers: [(name: String, value: String)],
                             untilEnd: Bool) -> [UInt8] {
        let value = { (name: String) in headers.first { $0.name.lowercased() == name }?.value }
        if value("transfer-encoding")?.lowercased().contains("chunked") == true {
            var body: [UInt8] = []
            while let lineEnd = rest.firstRange(of: Array("\r\n".utf8)) {
                let sizeText = String(decoding: rest[rest.startIndex..<lineEnd.lowerBound], as: UTF8.self)
                let size = Int(sizeText.split(separator: ";").first ?? "", radix: 16) ?? 0
                rest = rest[lineEnd.upperBound...]
                if size == 0 {
                    // Trailers, up to the empty line.
                    while let trailerEnd = rest.firstRange(of: Array("\r\n".utf8)) {
                        let empty = trailerEnd.lowerBound == rest.startIndex
                        rest = rest[trailerEnd.upperBound...]
                        if empty { break }
                    }
                    break
                }
                body += rest.prefix(size)
                rest = rest.dropFirst(size + 2)
            }
            return body
        }
        if let length = value("content-length").flatMap({ Int($0) }) {
            let body = Array(rest.prefix(length))
            rest = rest.dropFirst(length)
            return body
        }
        guard untilEnd else { return [] }
        let body = Array(rest)
        rest = rest[rest.endIndex...]
        return body
    }
}
