@testable import HTTP2

/// A client codec and a server codec joined in memory: ``pump()`` moves bytes both ways until
/// neither has anything to send, collecting each side's events (without `settings` and their acknowledgements).
final class CodecPair {
    let client: HTTP2Codec
    let server: HTTP2Codec
    var clientEvents: [HTTP2Event] = []
    var serverEvents: [HTTP2Event] = []

    init(client: HTTP2Settings = HTTP2Settings(), server: HTTP2Settings = HTTP2Settings()) {
        self.client = HTTP2Codec(role: .client, settings: client)
        self.server = HTTP2Codec(role: .server, settings: server)
    }

    /// Moves bytes both ways until both are quiet (bounded: a codec that never quiets fails).
    func pump() throws {
        for _ in 0..<10_000 {
            let (toServer, clientSent) = try output(of: client)
            let (toClient, serverSent) = try output(of: server)
            clientEvents += clientSent
            serverEvents += serverSent
            if toServer.isEmpty && toClient.isEmpty { return }
            serverEvents += try toServer.withUnsafeBytes { try server.receive($0) }.filter { !$0.isSettings }
            clientEvents += try toClient.withUnsafeBytes { try client.receive($0) }.filter { !$0.isSettings }
        }
        throw PumpError.neverQuiet
    }

    /// What `codec` has to send now, and the events sending it led to.
    func output(of codec: HTTP2Codec) throws -> ([UInt8], [HTTP2Event]) {
        var bytes: [UInt8] = []
        let events = try codec.send { bytes += $0 }
        return (bytes, events)
    }

    /// The DATA bytes of `stream` among the server's events.
    func serverData(_ stream: Int32) -> [UInt8] {
        serverEvents.flatMap { event -> [UInt8] in
            if case .data(stream, let bytes) = event { return bytes }
            return []
        }
    }

    /// How many DATA bytes of `stream` are among the server's events.
    func receivedBody(_ stream: Int32) -> Int { serverData(stream).count }

    enum PumpError: Error { case neverQuiet }
}

extension HTTP2Event {
    var isSettings: Bool {
        switch self {
        case .settings, .settingsAcknowledged: return true
        default: return false
        }
    }
}
