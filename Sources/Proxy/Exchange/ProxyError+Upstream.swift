import EventLoop

extension ProxyError {
    /// Every connection to the backend is busy and no more requests can wait for one (the
    /// queue is full, or the wait exceeded `timeouts.connect`).
    static func connectionLimitReached(_ limit: Int) -> ProxyError {
        ProxyError(status: 503, type: "connection_limit_reached",
                   message: "all \(limit) connections to the backend are busy; retry shortly")
    }

    /// The error answered when a backend connection ends before a response head arrived.
    static func upstreamFailure(_ reason: ConnectionEnd, connected: Bool, partial: Bool) -> ProxyError {
        if partial {
            return ProxyError(status: 502, type: "http_response_incomplete",
                              message: "the backend closed the connection in the middle of the response head")
        }
        switch reason {
        case .dnsFailure:
            return ProxyError(status: 502, type: "dns_error", message: "the backend's name could not be resolved")
        case .dnsTimeout:
            return ProxyError(status: 504, type: "dns_timeout", message: "resolving the backend's name timed out")
        case .refused:
            return ProxyError(status: 502, type: "connection_refused", message: "the backend refused the connection")
        case .timeout:
            return connected
                ? ProxyError(status: 504, type: "http_response_timeout", message: "the backend did not answer in time")
                : ProxyError(status: 504, type: "connection_timeout", message: "the backend could not be reached in time")
        case .tlsCertificate(let message):
            return ProxyError(status: 502, type: "tls_certificate_error",
                              message: "the backend's TLS certificate was rejected: \(message)")
        case .tlsProtocol(let message):
            return ProxyError(status: 502, type: "tls_protocol_error", message: "TLS with the backend failed: \(message)")
        case .endOfStream, .socketError:
            if !connected {
                return ProxyError(status: 502, type: "connection_refused", message: "could not connect to the backend")
            }
            return ProxyError(status: 502, type: "connection_terminated",
                              message: "the backend closed the connection before responding")
        }
    }
}
