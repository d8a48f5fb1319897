import EventLoop
import HTTP1
import HTTPMessage

/// One connection of a ``SimpleHTTPServer``: reads a request, hands it to the handler, writes
/// the answer, and only then looks at the next request (so responses stay in order).
final class SimpleHTTPSession: ConnectionDelegate {
    private enum Phase {
        /// Waiting for (the rest of) a request head; also the idle state between requests.
        case head
        /// Collecting the body of `head`.
        case body(RequestHead, BodyCollector)
        /// The handler has the request; its answer has not arrived yet.
        case awaiting(RequestHead)
        case closed
    }

    let connection: any ByteStream
    private weak var server: SimpleHTTPServer?
    private let limits: SimpleHTTPServerLimits
    private let handler: SimpleHTTPServer.Handler
    private var phase = Phase.head
    private var reader: HeadReader
    /// Incremented per request, so a late or repeated `respond` for an earlier one is ignored.
    private var generation = 0
    /// True while ``process()`` runs: a handler answering synchronously must not re-enter it.
    private var processing = false
    /// The client half-closed after its request: answer it, then close.
    private var peerClosed = false

    init(connection: any ByteStream, server: SimpleHTTPServer) {
        self.connection = connection
        self.server = server
        self.limits = server.limits
        self.handler = server.handler
        self.reader = HeadReader(limit: server.limits.maxHeadBytes)
    }

    func start() {
        connection.delegate = self
        connection.setTimeouts(read: limits.idleTimeout, write: limits.idleTimeout)
        // Bounds what a client can pile up (e.g. pipelined requests while a handler is still
        // answering): libevent pauses the socket above this. A whole head plus a whole
        // Content-Length body plus a chunk-framing window always fit, so a valid request never stalls.
        connection.setReadHighWatermark(limits.maxHeadBytes + limits.maxBodyBytes + 72 * 1024)
        connection.startReading()
    }

    // MARK: ConnectionDelegate

    func connectionDidRead(_ connection: any ByteStream) {
        process()
    }

    func connection(_ connection: any ByteStream, didEnd reason: ConnectionEnd) {
        if reason == .endOfStream, case .awaiting = phase {
            // A client may shut down its write side after sending the request; it still
            // expects the answer.
            peerClosed = true
            return
        }
        finish(graceful: reason == .endOfStream)
    }

    // MARK: Reading requests

    private func process() {
        guard !processing else { return }
        processing = true
        defer { processing = false }
        while true {
            switch phase {
            case .head:
                guard readHead() else { return }
            case .body(let head, var collector):
                switch collector.read(from: connection.input) {
                case .needMore:
                    phase = .body(head, collector)
                    return
                case .complete(let body):
                    dispatch(head, body: body)
                case .tooLarge:
                    fail(status: 413, "request body too large")
                case .invalid(let message):
                    fail(status: 400, message)
                }
            case .awaiting, .closed:
                return
            }
        }
    }

    /// Parses the next head if it is complete; returns whether processing can continue.
    private func readHead() -> Bool {
        do {
            let maxFields = limits.maxFields
            let parsed = try reader.read(from: connection.input) { bytes throws(HTTPParseError) in
                try RequestHeadParser.parse(bytes, maxFields: maxFields)
            }
            guard let head = parsed else { return false }
            begin(head)
            return true
        } catch {
            switch error {
            case .headTooLarge: fail(status: 431, "request head too large")
            case .tooManyFields: fail(status: 431, "too many header fields")
            case .invalid(let message): fail(status: 400, message)
            }
            return false
        }
    }

    private func begin(_ head: RequestHead) {
        if case .authority = head.target {
            // No tunnels here; the bytes after a CONNECT head are not HTTP.
            fail(status: 405, "CONNECT is not supported")
            return
        }
        let collector = BodyCollector(framing: head.framing, limit: limits.maxBodyBytes)
        if collector.declaredTooLarge {
            fail(status: 413, "request body too large")
            return
        }
        if head.expectsContinue, head.version == .http1_1, head.framing != .none, head.framing != .contentLength(0) {
            connection.write(Array("HTTP/1.1 100 Continue\r\n\r\n".utf8))
        }
        phase = .body(head, collector)
    }

    private func dispatch(_ head: RequestHead, body: [UInt8]) {
        generation += 1
        let current = generation
        phase = .awaiting(head)
        handler(SimpleRequest(head: head, body: body)) { [weak self] response in
            self?.respond(response, generation: current)
        }
    }

    // MARK: Writing responses

    private func respond(_ response: SimpleResponse, generation: Int) {
        guard case .awaiting(let head) = phase, generation == self.generation, connection.isOpen else { return }
        let encoded = ResponseEncoder.encode(response, method: head.method, version: head.version,
                                             keepAlive: head.keepAlive && !peerClosed)
        connection.write(encoded.bytes)
        if encoded.closes {
            finish(graceful: true)
            return
        }
        phase = .head
        // A synchronous answer returns into process(), which carries on with pipelined bytes.
        if !processing { process() }
    }

    /// Answers a request that cannot be processed and closes: after a framing error the rest of
    /// the input cannot be trusted.
    private func fail(status: Int, _ message: String) {
        let response = SimpleResponse.error(status: status, message)
        connection.write(ResponseEncoder.encode(response, method: "GET", version: .http1_1, keepAlive: false).bytes)
        finish(graceful: true)
    }

    /// Closes the connection — after sending what is queued when `graceful` — and leaves the server.
    private func finish(graceful: Bool) {
        if case .closed = phase { return }
        phase = .closed
        if graceful { connection.closeAfterFlush() } else { connection.close() }
        server?.sessionDidEnd(self)
    }
}
