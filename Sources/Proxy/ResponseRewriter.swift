import HTTP1

/// How the proxy frames a response body toward the client.
enum ClientFraming: Equatable {
    /// No body (HEAD, 1xx, 204, 304).
    case none
    /// Same Content-Length as the backend sent.
    case contentLength
    /// Re-framed as chunked (backend sent chunked, or close-delimited to an HTTP/1.1 client).
    case chunked
    /// Raw bytes ended by closing the connection (HTTP/1.0 clients without a length).
    case close
}

/// Builds the head sent to the client from a backend's response head.
enum ResponseRewriter {
    /// The framing toward a client of `clientVersion` for a backend body framed as `framing`.
    static func clientFraming(_ framing: BodyFraming, clientVersion: HTTPVersion) -> ClientFraming {
        switch framing {
        case .none: return .none
        case .contentLength: return .contentLength
        case .chunked, .untilClose: return clientVersion == .http1_1 ? .chunked : .close
        }
    }

    /// Transfer codings of a response besides `chunked`, in order (rare: e.g. `gzip, chunked`).
    static func otherTransferCodings(_ response: ResponseHead) -> [String] {
        response.fields.tokens("transfer-encoding").filter { $0 != "chunked" }
    }

    /// The client-facing head. `keepAlive` says whether the client connection stays open after this response.
    static func head(for response: ResponseHead, framing: ClientFraming, clientVersion: HTTPVersion, keepAlive: Bool) -> [UInt8] {
        var out = [UInt8]()
        out.reserveCapacity(512)
        out.append(contentsOf: HeadBytes.http11Space)
        out.appendDecimal(response.status)
        out.append(0x20)
        out.appendUTF8(response.reason)
        out.append(contentsOf: HeadBytes.crlf)
        let connectionNamed = response.fields.connectionOptions()
        for field in response.fields {
            if FieldNames.isHopByHop(field) { continue }
            if !connectionNamed.isEmpty && FieldNames.isNamed(field, in: connectionNamed) { continue }
            if framing == .chunked && field.nameEquals("content-length") { continue }
            out.appendField(field.name, field.value)
        }
        if framing == .chunked {
            // Codings other than chunked (e.g. gzip) stay: the relay only re-frames the chunks.
            let codings = otherTransferCodings(response)
            if codings.isEmpty {
                out.append(contentsOf: HeadBytes.chunkedLine)
            } else {
                out.appendField("Transfer-Encoding", (codings + ["chunked"]).joined(separator: ", "))
            }
        }
        if !keepAlive {
            out.append(contentsOf: HeadBytes.connectionClose)
        } else if clientVersion == .http1_0 {
            out.append(contentsOf: HeadBytes.connectionKeepAlive)
        }
        out.append(contentsOf: RequestRewriter.viaLine)
        out.append(contentsOf: HeadBytes.crlf)
        return out
    }
}
