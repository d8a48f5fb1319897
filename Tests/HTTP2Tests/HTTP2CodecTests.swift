import HTTP1
@testable import HTTP2
import XCTest

/// The codec against itself (a client codec and a server codec exchanging bytes in memory) and
/// against hand-made frames a broken or hostile peer would send.
final class HTTP2CodecTests: XCTestCase {
    func testARequestAndAResponseWithBodyAndTrailersCrossIntact() throws {
        let pair = CodecPair()
        let id = try pair.client.submitRequest(HTTP2Head(method: "GET", scheme: "https", authority: "api.test",
                                                         path: "/v1/items?x=1", fields: HTTPFields([HTTPField(name: "Accept", value: "*/*")])),
                                               endStream: true)
        try pair.pump()
        XCTAssertEqual(pair.serverEvents, [
            .head(stream: id, HTTP2Head(method: "GET", scheme: "https", authority: "api.test", path: "/v1/items?x=1",
                                        fields: HTTPFields([HTTPField(name: "accept", value: "*/*")]))),
            .end(stream: id),
        ])
        try pair.server.submitResponse(stream: id, HTTP2Head(status: 200, fields: HTTPFields([HTTPField(name: "content-type", value: "application/grpc")])),
                                       endStream: false)
        let body = Array("hello, world".utf8)
        body.withUnsafeBytes { pair.server.sendBody(stream: id, $0) }
        pair.server.endBody(stream: id, trailers: HTTPFields([HTTPField(name: "grpc-status", value: "0")]))
        try pair.pump()
        XCTAssertEqual(pair.clientEvents, [
            .head(stream: id, HTTP2Head(status: 200, fields: HTTPFields([HTTPField(name: "content-type", value: "application/grpc")]))),
            .data(stream: id, body),
            .trailers(stream: id, HTTPFields([HTTPField(name: "grpc-status", value: "0")])),
            .end(stream: id),
            .closed(stream: id, .noError),
        ])
        XCTAssertEqual(pair.serverEvents.last, .closed(stream: id, .noError))
        XCTAssertTrue(pair.client.isActive, "the connection stays open for more streams")
    }

    /// With a sink, a stream's DATA goes to it as nghttp2 decodes it, split as the frames were,
    /// and no `.data` event holds a copy; a stream the sink does not take (one whose head is an
    /// event of the same read) gets its DATA as events, after its head, as before.
    func testADataSinkTakesTheDataOfTheStreamsItKnowsAndLeavesTheRestAsEventsInOrder() throws {
        let pair = CodecPair()
        var known: Set<Int32> = []
        var sunk: [(Int32, [UInt8])] = []
        pair.server.dataSink = { stream, bytes in
            guard known.contains(stream) else { return false }
            sunk.append((stream, Array(bytes)))
            return true
        }
        let first = try pair.client.submitRequest(HTTP2Head(method: "POST", scheme: "http", authority: "a.test", path: "/"), endStream: false)
        Array("ab".utf8).withUnsafeBytes { pair.client.sendBody(stream: first, $0) }
        try pair.pump()
        XCTAssertEqual(Array(pair.serverEvents.map { event -> String in
            switch event {
            case .head: "head"
            case .data(_, let bytes): "data \(String(decoding: bytes, as: UTF8.self))"
            default: "\(event)"
            }
        }.prefix(2)), ["head", "data ab"], "a stream opened in the same read: its DATA as an event after its head")
        XCTAssertTrue(sunk.isEmpty)
        known.insert(first)
        pair.serverEvents.removeAll()
        Array("cd".utf8).withUnsafeBytes { pair.client.sendBody(stream: first, $0) }
        try pair.pump()
        Array("ef".utf8).withUnsafeBytes { pair.client.sendBody(stream: first, $0) }
        pair.client.endBody(stream: first)
        try pair.pump()
        XCTAssertEqual(sunk.map { String(decoding: $0.1, as: UTF8.self) }, ["cd", "ef"], "each DATA frame to the sink, none lost or merged")
        XCTAssertEqual(sunk.map(\.0), [first, first])
        XCTAssertFalse(pair.serverEvents.contains { if case .data = $0 { true } else { false } }, "no event holds a copy")
        XCTAssertTrue(pair.serverEvents.contains(.end(stream: first)), "the end still comes as an event")
    }

    func testADataEventsArrayHandedBackHoldsTheNextEventsBytesAndOnlyThose() throws {
        // A body that comes in the read of its head is an event; its array, handed back, holds
        // the next one's bytes: each event carries exactly its own frame, shorter or longer.
        let pair = CodecPair()
        var addresses: Set<UInt> = []
        for (index, body) in ["a much longer first body", "short", "", "third body, longer again", "x"].enumerated() {
            let id = try pair.client.submitRequest(HTTP2Head(method: "POST", scheme: "http", authority: "a.test", path: "/\(index)"),
                                                   endStream: false)
            Array(body.utf8).withUnsafeBytes { pair.client.sendBody(stream: id, $0) }
            pair.client.endBody(stream: id)
            try pair.pump()
            var datas: [[UInt8]] = []
            for event in pair.serverEvents { if case .data(let stream, let bytes) = event, stream == id { datas.append(bytes) } }
            pair.serverEvents.removeAll()
            XCTAssertEqual(datas.map { String(decoding: $0, as: UTF8.self) }, body.isEmpty ? [] : [body])
            // (Moved out, as a consumer holds them: a copy still held would share the storage.)
            while let bytes = datas.popLast() {
                addresses.insert(bytes.withUnsafeBytes { UInt(bitPattern: $0.baseAddress) })
                pair.server.recycle(data: bytes)
            }
        }
        XCTAssertEqual(addresses.count, 1, "one array, handed back and reused for each event")
        // An array larger than a DATA frame is not kept.
        pair.server.recycle(data: [UInt8](repeating: 0, count: HTTP2Codec.keptDataCapacity + 1))
        let id = try pair.client.submitRequest(HTTP2Head(method: "POST", scheme: "http", authority: "a.test", path: "/big"), endStream: false)
        Array("after".utf8).withUnsafeBytes { pair.client.sendBody(stream: id, $0) }
        try pair.pump()
        let after = pair.serverEvents.compactMap { if case .data(id, let bytes) = $0 { bytes } else { nil } }
        XCTAssertEqual(after.map { String(decoding: $0, as: UTF8.self) }, ["after"])
        XCTAssertLessThanOrEqual(after.first?.capacity ?? 0, HTTP2Codec.keptDataCapacity)
    }

    func testAReadOfManyCallsMessagesReusesTheArraysOfTheLastAndKeepsFewLargeOnes() throws {
        // A gRPC app's 40 calls in one read, each with its message: the 40 arrays handed back
        // hold the next read's 40 messages, no new one made.
        let pair = CodecPair()
        func read(_ count: Int, body: String) throws -> [[UInt8]] {
            var ids: [Int32] = []
            for index in 0..<count {
                let id = try pair.client.submitRequest(HTTP2Head(method: "POST", scheme: "http", authority: "a.test", path: "/\(index)"),
                                                       endStream: false)
                Array(body.utf8).withUnsafeBytes { pair.client.sendBody(stream: id, $0) }
                pair.client.endBody(stream: id)
                ids.append(id)
            }
            try pair.pump()
            let datas = pair.serverEvents.compactMap { if case .data(let id, let bytes) = $0, ids.contains(id) { bytes } else { nil } }
            pair.serverEvents.removeAll()
            XCTAssertEqual(datas.count, count)
            XCTAssertTrue(datas.allSatisfy { String(decoding: $0, as: UTF8.self) == body }, "each event holds its own message")
            return datas
        }
        func handBack(_ datas: consuming [[UInt8]]) -> Set<UInt> {
            var addresses: Set<UInt> = []
            while let bytes = datas.popLast() {
                addresses.insert(bytes.withUnsafeBytes { UInt(bitPattern: $0.baseAddress) })
                pair.server.recycle(data: bytes)
            }
            return addresses
        }
        let first = handBack(try read(40, body: "a message of a call"))
        let second = try read(40, body: "the next message")
        let reused = Set(second.map { bytes in bytes.withUnsafeBytes { UInt(bitPattern: $0.baseAddress) } })
        XCTAssertEqual(reused, first, "all 40 arrays held the next read's messages")
        _ = handBack(second)
        // Arrays larger than a usual message: only a few kept (8), so a busy connection does not
        // hold 64 frames' worth.
        pair.server.trimSpares(to: 0)
        XCTAssertEqual(pair.server.spareDataCount, 0)
        for _ in 0..<20 { pair.server.recycle(data: [UInt8](repeating: 0, count: 4096)) }
        XCTAssertEqual(pair.server.spareDataCount, HTTP2Codec.spareLargeDataLimit)
        for _ in 0..<100 { pair.server.recycle(data: [UInt8](repeating: 0, count: 100)) }
        XCTAssertEqual(pair.server.spareDataCount, HTTP2Codec.spareHeadLimit, "small ones up to the head spares' limit")
    }

    /// A request head's fields go from where the head keeps them, names lowercased, without
    /// the connection-specific ones, those its `Connection` names, and `te` but for `trailers`.
    func testARequestHeadLeavesOutConnectionSpecificFieldsAndGoesLowercase() throws {
        let pair = CodecPair()
        let fields: [(String, String)] = [("Connection", "close, X-Hop"), ("X-Hop", "1"), ("TE", "trailers"), ("Transfer-Encoding", "chunked"),
                                          ("Keep-Alive", "5"), ("Proxy-Connection", "x"), ("Upgrade", "h2c"), ("Accept", "*/*"),
                                          ("X-Long", String(repeating: "v", count: 3000))]
        let id = try pair.client.submitRequest(HTTP2Head(method: "POST", scheme: "https", authority: "a.test", path: "/p",
                                                         fields: HTTPFields(fields.map { HTTPField(name: $0.0, value: $0.1) })),
                                               endStream: true)
        try pair.pump()
        XCTAssertEqual(pair.serverEvents.first, .head(stream: id, HTTP2Head(method: "POST", scheme: "https", authority: "a.test", path: "/p",
                                                                       fields: HTTPFields([HTTPField(name: "te", value: "trailers"),
                                                                                           HTTPField(name: "accept", value: "*/*"),
                                                                                           HTTPField(name: "x-long", value: String(repeating: "v", count: 3000))]))))
    }

    /// A request head handed over as it is written (the rewrite's way) arrives as written (names
    /// lowercased; the writer, the rewrite, leaves out what HTTP/2 forbids: see
    /// `RequestRewriterHTTP2Tests`), whether its fields were handed over by reference or copied;
    /// the next one carries only its own fields, whether smaller, larger than the storage kept
    /// for copies, or after one that was.
    func testARequestHeadWrittenInPlaceArrivesAsWrittenAndTheNextOneCarriesOnlyItsOwn() throws {
        let pair = CodecPair()
        func submit(_ path: String, _ fields: [(String, String)], endStream: Bool = true) throws -> Int32 {
            let bytes = fields.reduce(0) { $0 + $1.0.utf8.count + $1.1.utf8.count }
            // Every other field by reference (its bytes held here through the submit), the rest copied.
            let held = fields.map { (Array($0.0.utf8), Array($0.1.utf8)) }
            return try held.withUnsafeBufferPointer { held in
                try pair.client.submitRequest(method: "POST", scheme: "https", authority: "api.test", path: path,
                                              copyBytes: bytes, endStream: endStream) { out in
                    for (index, (name, value)) in held.enumerated() {
                        name.withUnsafeBytes { n in
                            value.withUnsafeBytes { v in
                                if index % 2 == 0 {
                                    out.addCopy(name: n, value: v)
                                } else {
                                    // (Arrays kept alive by `held`: their storage outlives the call.)
                                    out.add(name: n, value: v)
                                }
                            }
                        }
                    }
                }
            }
        }
        func expected(_ id: Int32, _ path: String, _ fields: [(String, String)]) -> HTTP2Event {
            .head(stream: id, HTTP2Head(method: "POST", scheme: "https", authority: "api.test", path: path,
                                        fields: HTTPFields(fields.map { HTTPField(name: $0.0, value: $0.1) })))
        }
        let first = try submit("/svc/One", [("Content-Type", "application/grpc"), ("authorization", "Bearer t"),
                                            ("TE", "trailers")])
        let second = try submit("/svc/Two", [("x-n", "2")])
        // Larger than the storage kept between heads (8 KiB), then a small one again.
        let big = (0..<40).map { ("x-big-\($0)", String(repeating: "v", count: 500)) }
        let third = try submit("/svc/Three", big, endStream: false)
        pair.client.endBody(stream: third)
        let fourth = try submit("/svc/Four", [])
        try pair.pump()
        XCTAssertEqual(pair.serverEvents.filter { if case .head = $0 { true } else { false } }, [
            expected(first, "/svc/One", [("content-type", "application/grpc"), ("authorization", "Bearer t"), ("te", "trailers")]),
            expected(second, "/svc/Two", [("x-n", "2")]),
            expected(third, "/svc/Three", big),
            expected(fourth, "/svc/Four", []),
        ])
    }

    /// A response's `:status` is read as the number it says (three digits, read from the bytes).
    func testAResponseStatusIsReadAsItsNumber() throws {
        for status in [100, 204, 404, 599, 999] {  // (both ends of the constant table)
            let pair = CodecPair()
            let id = try pair.client.submitRequest(HTTP2Head(method: "GET", scheme: "http", authority: "a.test", path: "/"), endStream: true)
            try pair.pump()
            if status < 200 {
                try pair.server.submitResponse(stream: id, HTTP2Head(status: status), endStream: false)
            }
            try pair.server.submitResponse(stream: id, HTTP2Head(status: status < 200 ? 200 : status), endStream: true)
            try pair.pump()
            let statuses = pair.clientEvents.compactMap { event -> Int? in
                if case .head(_, let head) = event { return head.status }
                return nil
            }
            XCTAssertEqual(statuses, status < 200 ? [status, 200] : [status])
        }
    }

    /// Trailers go as they are given, names lowercased, without what HTTP/2 forbids: the
    /// connection-specific fields and any field their `Connection` names (RFC 9113 §8.2.2).
    func testTrailersLeaveOutConnectionSpecificFieldsAndGoLowercase() throws {
        let pair = CodecPair()
        let id = try pair.client.submitRequest(HTTP2Head(method: "POST", scheme: "http", authority: "a.test", path: "/"), endStream: true)
        try pair.pump()
        try pair.server.submitResponse(stream: id, HTTP2Head(status: 200), endStream: false)
        pair.server.endBody(stream: id, trailers: HTTPFields([
            HTTPField(name: "Grpc-Status", value: "0"), HTTPField(name: "Connection", value: "X-Hop"), HTTPField(name: "x-hop", value: "1"),
            HTTPField(name: "Keep-Alive", value: "5"), HTTPField(name: "te", value: "gzip"), HTTPField(name: "grpc-message", value: "done"),
        ]))
        try pair.pump()
        XCTAssertEqual(pair.clientEvents.filter { if case .trailers = $0 { true } else { false } },
                       [.trailers(stream: id, HTTPFields([HTTPField(name: "grpc-status", value: "0"), HTTPField(name: "grpc-message", value: "done")]))])
    }

    /// The same trailer section again (one array, as a server's calls end) goes as the pairs
    /// made for it the last time; another section, even one of the same size, goes as itself,
    /// and so does the first again after it; a copy changed in place is another section.
    func testTrailersGivenAgainGoAsTheyAreAndOthersAsThemselves() throws {
        let pair = CodecPair()
        let ok = HTTPFields([HTTPField(name: "grpc-status", value: "0"), HTTPField(name: "grpc-message", value: "")])
        var changed = ok
        changed.fields[0] = HTTPField(name: "grpc-status", value: "7")
        let other = HTTPFields([HTTPField(name: "grpc-status", value: "1"), HTTPField(name: "grpc-message", value: "x")])
        let large = HTTPFields([HTTPField(name: "x-large", value: String(repeating: "l", count: 400))])
        for trailers in [ok, ok, other, ok, changed, ok, large, large, ok] {
            let id = try pair.client.submitRequest(HTTP2Head(method: "POST", scheme: "http", authority: "a.test", path: "/"), endStream: true)
            try pair.pump()
            try pair.server.submitResponse(stream: id, HTTP2Head(status: 200), endStream: false)
            pair.server.endBody(stream: id, trailers: trailers)
            try pair.pump()
            let received = pair.clientEvents.compactMap { event -> HTTPFields? in
                if case .trailers(id, let fields) = event { fields } else { nil }
            }
            XCTAssertEqual(received, [trailers])
        }
    }

    func testAnEventSaysWhetherItEndsAGivenStream() throws {
        let pair = CodecPair()
        let ended = try pair.client.submitRequest(HTTP2Head(method: "GET", scheme: "http", authority: "a.test", path: "/"), endStream: true)
        let open = try pair.client.submitRequest(HTTP2Head(method: "POST", scheme: "http", authority: "a.test", path: "/"), endStream: false)
        try pair.pump()
        let events = pair.serverEvents
        XCTAssertEqual(events.filter { $0.isEnd(of: ended) }.count, 1, "the bodyless request's end: \(events)")
        XCTAssertFalse(events.contains { $0.isEnd(of: open) }, "a request whose body is still to come has none")
        XCTAssertFalse(HTTP2Event.closed(stream: ended, .noError).isEnd(of: ended), "a close is not an end")
        XCTAssertFalse(HTTP2Event.end(stream: ended).isEnd(of: open), "another stream's end is not its end")
    }

    func testStreamsWithBodiesQueuedTakeTurnsOnTheConnection() throws {
        // Both sides: an app's responses on one connection, and apps' uploads on a shared
        // upstream connection. One stream's large body must not hold back another's until it
        // ends (nghttp2 told SETTINGS_NO_RFC7540_PRIORITIES sends the oldest stream's first).
        for serverSends in [true, false] {
            let pair = CodecPair()
            var ids: [Int32] = []
            for path in ["/a", "/b"] {
                ids.append(try pair.client.submitRequest(HTTP2Head(method: "POST", scheme: "http", authority: "a.test", path: path),
                                                         endStream: serverSends))
            }
            try pair.pump()
            let sender = serverSends ? pair.server : pair.client
            if serverSends {
                for id in ids { try pair.server.submitResponse(stream: id, HTTP2Head(status: 200), endStream: false) }
            }
            // Three frames' worth each, within the default windows.
            let body = [UInt8](repeating: 0x61, count: 3 * 16_384)
            for id in ids {
                body.withUnsafeBytes { sender.sendBody(stream: id, $0) }
                sender.endBody(stream: id)
            }
            let (bytes, _) = try pair.output(of: sender)
            let order = RawFrames.frames(in: bytes).filter { $0.type == 0 && !$0.payload.isEmpty }.map(\.stream)
            XCTAssertEqual(order.count, 6, serverSends ? "responses" : "uploads")
            XCTAssertNotEqual(Array(order.prefix(3)), [ids[0], ids[0], ids[0]],
                              "\(serverSends ? "responses" : "uploads"): the first stream's body went out whole first: \(order)")
        }
    }

    func testAStreamAfterOneWithTrailersAndALargeBodyStartsWithAnEmptyQueue() throws {
        // The queue an ended stream leaves serves the next stream: nothing of the first (its
        // trailers, bytes it left, its end) may show on the second.
        let pair = CodecPair()
        let first = try pair.client.submitRequest(HTTP2Head(method: "GET", scheme: "http", authority: "a.test", path: "/1"), endStream: true)
        try pair.pump()
        try pair.server.submitResponse(stream: first, HTTP2Head(status: 200), endStream: false)
        let large = (0..<20_000).map { UInt8(truncatingIfNeeded: $0) }
        large.withUnsafeBytes { pair.server.sendBody(stream: first, $0) }
        pair.server.endBody(stream: first, trailers: HTTPFields([HTTPField(name: "x-first", value: "1")]))
        try pair.pump()
        XCTAssertEqual(pair.clientEvents.last, .closed(stream: first, .noError))
        pair.clientEvents.removeAll()

        let second = try pair.client.submitRequest(HTTP2Head(method: "GET", scheme: "http", authority: "a.test", path: "/2"), endStream: true)
        try pair.pump()
        try pair.server.submitResponse(stream: second, HTTP2Head(status: 200), endStream: false)
        let body = Array("second".utf8)
        body.withUnsafeBytes { pair.server.sendBody(stream: second, $0) }
        try pair.pump()
        XCTAssertEqual(pair.clientEvents, [.head(stream: second, HTTP2Head(status: 200)), .data(stream: second, body)],
                       "the body so far, not ended")
        pair.server.endBody(stream: second)
        try pair.pump()
        XCTAssertEqual(Array(pair.clientEvents.dropFirst(2)), [.end(stream: second), .closed(stream: second, .noError)],
                       "no trailers of the first stream")
    }

    func testAHeadDecodedIntoARecycledOnesStorageCarriesNothingOfIt() throws {
        // The consumer hands each head and event list back; the next stream's head is decoded
        // into that storage: none of the first head's fields or pseudo-header fields may show.
        let pair = CodecPair()
        let first = try pair.client.submitRequest(HTTP2Head(method: "POST", scheme: "https", authority: "a.test", path: "/1",
                                                            fields: HTTPFields([HTTPField(name: "x-first", value: "1"),
                                                                                HTTPField(name: "cookie", value: "c=1")])),
                                                  endStream: true)
        do {
            // (Scoped: once handed back, nothing here holds the storage, so it is reused in place.)
            let (bytes, _) = try pair.output(of: pair.client)
            let events = try bytes.withUnsafeBytes { try pair.server.receive($0) }
            let firstHead = events.compactMap { if case .head(first, let head) = $0 { head } else { nil } }
            XCTAssertEqual(firstHead.first?.firstField("x-first"), "1")
            for head in firstHead { pair.server.recycle(head: head) }
            pair.server.recycle(events: events)
        }

        let second = try pair.client.submitRequest(HTTP2Head(method: "GET", scheme: "http", authority: "b.test", path: "/2"),
                                                   endStream: true)
        let (more, _) = try pair.output(of: pair.client)
        let events = try more.withUnsafeBytes { try pair.server.receive($0) }
        XCTAssertEqual(events.filter { !$0.isSettings }, [
            .head(stream: second, HTTP2Head(method: "GET", scheme: "http", authority: "b.test", path: "/2")),
            .end(stream: second),
        ])
    }

    func testEveryMethodAndSchemeArrivesAsSentWhetherUsualOrNot() throws {
        // The usual methods and schemes are decoded as literals; any other, or one differing
        // only in case (methods are case-sensitive, RFC 9110 §9.1), is kept byte for byte.
        let pair = CodecPair()
        let methods = ["GET", "PUT", "POST", "HEAD", "PATCH", "DELETE", "OPTIONS", "get", "Post", "PROPFIND", "GETX", "M"]
        var sent: [(Int32, String, String)] = []
        for (index, method) in methods.enumerated() {
            let scheme = index % 2 == 0 ? "https" : "http"
            let id = try pair.client.submitRequest(HTTP2Head(method: method, scheme: scheme, authority: "a.test", path: "/\(index)"),
                                                   endStream: true)
            sent.append((id, method, scheme))
        }
        try pair.pump()
        let heads = pair.serverEvents.compactMap { if case .head(let id, let head) = $0 { (id, head) } else { nil } }
        XCTAssertEqual(heads.map(\.0), sent.map(\.0))
        for ((_, head), (_, method, scheme)) in zip(heads, sent) {
            XCTAssertEqual(head.method, method)
            XCTAssertEqual(head.scheme, scheme)
        }
    }

    func testEachStreamGetsItsOwnAuthorityWhenTheConnectionsStreamsNameSeveral() throws {
        // A head with the previous one's `:authority` bytes takes its String: one that differs
        // in a byte or in length must not.
        let pair = CodecPair()
        let authorities = ["a.test", "a.test", "b.test", "a.test:8080", "a.test:8080", "a.tesT", "a.tes", "a.test.", "a.test"]
        var sent: [Int32] = []
        for (index, authority) in authorities.enumerated() {
            sent.append(try pair.client.submitRequest(HTTP2Head(method: "GET", scheme: "http", authority: authority, path: "/\(index)"),
                                                      endStream: true))
        }
        try pair.pump()
        let heads = pair.serverEvents.compactMap { if case .head(let id, let head) = $0 { (id, head) } else { nil } }
        XCTAssertEqual(heads.map(\.0), sent)
        XCTAssertEqual(heads.map { $0.1.authority }, authorities)
    }

    func testOnlyAShortAuthorityOrPathIsKeptForTheNextHead() {
        // The Strings kept for comparison live as long as the connection: a long one (nghttp2
        // bounds it only by the header list size) is not kept, and its head still gets it whole.
        for name in [":authority", ":path"] {
            var recent = HTTP2Head.RecentValues()
            func received(_ value: [UInt8]) -> String? {
                var head = HTTP2Head()
                Array(name.utf8).withUnsafeBufferPointer { name in
                    value.withUnsafeBufferPointer { head.add(name: name, value: $0, recent: &recent) }
                }
                return name == ":path" ? head.path : head.authority
            }
            let kept = { name == ":path" ? recent.path : recent.authority }
            XCTAssertEqual(received(Array("/a.test/Call".utf8)), "/a.test/Call")
            XCTAssertEqual(kept(), "/a.test/Call")
            let long = [UInt8](repeating: UInt8(ascii: "a"), count: HTTP2Head.keptValueLimit + 1)
            XCTAssertEqual(received(long), String(decoding: long, as: UTF8.self))
            XCTAssertNil(kept(), "a long \(name) replaces the kept one without being kept")
            XCTAssertEqual(received(Array("/a.test/Call".utf8)), "/a.test/Call")
            XCTAssertEqual(kept(), "/a.test/Call")
        }
    }

    func testEachStreamGetsItsOwnPathWhenTheConnectionsStreamsCallSeveral() throws {
        // A head with the previous one's `:path` bytes takes its String (a gRPC app calling one
        // method): one that differs in a byte or in length must not.
        let pair = CodecPair()
        let paths = ["/pkg.Service/Method", "/pkg.Service/Method", "/pkg.Service/Other", "/pkg.Service/Methods",
                     "/pkg.Service/Method", "/pkg.Service/MethoD", "/pkg.Service/Metho", "/", "/pkg.Service/Method"]
        var sent: [Int32] = []
        for path in paths {
            sent.append(try pair.client.submitRequest(HTTP2Head(method: "POST", scheme: "http", authority: "a.test", path: path),
                                                      endStream: true))
        }
        try pair.pump()
        let heads = pair.serverEvents.compactMap { if case .head(let id, let head) = $0 { (id, head) } else { nil } }
        XCTAssertEqual(heads.map(\.0), sent)
        XCTAssertEqual(heads.map { $0.1.path }, paths)
    }

    func testValuesThatChangeWithEveryRequestLeaveTheHeaderTableToTheOnesThatRepeat() throws {
        // A gRPC caller with a deadline sends a new `grpc-timeout` each call, a traced one a new
        // `traceparent`: indexed, they would push a field every call repeats out of the HPACK
        // table (and make each lookup compare them all). Sent unindexed, the repeated field is
        // still an index after a hundred calls, and every value arrives as sent.
        let pair = CodecPair()
        let big = String(repeating: "v", count: 1_000)
        func head(_ call: Int) -> HTTP2Head {
            var fields = HTTPFields()
            fields.append(HTTPField(name: "x-repeated", value: big))
            fields.append(HTTPField(name: "grpc-timeout", value: "\(99_000_000 - call)u"))
            fields.append(HTTPField(name: "traceparent", value: "00-\(String(repeating: "0", count: 28))\(1000 + call)-00f067aa0ba902b7-01"))
            fields.append(HTTPField(name: "authorization", value: "AWS4-HMAC-SHA256 Credential=AKID/20261129/us-east-1/s3/aws4_request, Signature=\(call)"))
            return HTTP2Head(method: "POST", scheme: "http", authority: "a.test", path: "/pkg.Service/Method", fields: fields)
        }
        var sizes: [Int] = []
        for call in 0..<100 {
            _ = try pair.client.submitRequest(head(call), endStream: true)
            let (bytes, _) = try pair.output(of: pair.client)
            sizes.append(bytes.count)
            pair.serverEvents += try bytes.withUnsafeBytes { try pair.server.receive($0) }.filter { !$0.isSettings }
            try pair.pump()
        }
        XCTAssertGreaterThan(sizes[0], 1_000)
        XCTAssertLessThan(sizes.dropFirst().max() ?? 0, 300, "the repeated field was evicted and sent again: \(sizes)")
        let heads = pair.serverEvents.compactMap { if case .head(_, let head) = $0 { head } else { nil } }
        XCTAssertEqual(heads.count, 100)
        for (call, received) in heads.enumerated() {
            XCTAssertEqual(received.fields, head(call).fields)
        }
    }

    func testOnlyFieldsThatChangeWithEveryRequestAreUnindexed() {
        func unindexed(_ name: String) -> Bool {
            var name = name
            return name.withUTF8 { UnindexedFields.contains(name: UnsafeRawBufferPointer($0)) }
        }
        for name in ["grpc-timeout", "Grpc-Timeout", "traceparent", "tracestate", "x-request-id", "X-Request-ID", "dpop",
                     "x-amz-date", "grpc-trace-bin"] {
            XCTAssertTrue(unindexed(name), name)
        }
        // (`authorization` nghttp2 never indexes itself.)
        for name in ["authorization", "content-type", "user-agent", "grpc-timeouts", "x-request-ids", "te", "dpo", "x-amz-data", ""] {
            XCTAssertFalse(unindexed(name), name)
        }
    }

    func testWantingToSendFollowsEveryCallThatQueuesAFrame() throws {
        // The codec remembers nghttp2's answer until a call that can change it: each of these
        // queues a frame, and a codec that missed one would leave it unsent (a stalled stream).
        let pair = CodecPair()
        let id = try pair.client.submitRequest(HTTP2Head(method: "POST", scheme: "https", authority: "a.test", path: "/"),
                                               endStream: false)
        try pair.pump()
        XCTAssertFalse(pair.client.wantsToSend, "all sent")
        XCTAssertFalse(pair.client.wantsToSend, "and asked again, still nothing")
        Array("body".utf8).withUnsafeBytes { pair.client.sendBody(stream: id, $0) }
        XCTAssertTrue(pair.client.wantsToSend, "a body queued")
        try pair.pump()
        XCTAssertFalse(pair.client.wantsToSend)
        pair.client.endBody(stream: id)
        XCTAssertTrue(pair.client.wantsToSend, "the end queued")
        try pair.pump()
        XCTAssertFalse(pair.server.wantsToSend)
        try pair.server.submitResponse(stream: id, HTTP2Head(status: 200), endStream: false)
        XCTAssertTrue(pair.server.wantsToSend, "a response head queued")
        try pair.pump()
        XCTAssertFalse(pair.server.wantsToSend)
        pair.server.reset(stream: id, .cancel)
        XCTAssertTrue(pair.server.wantsToSend, "a reset queued")
        try pair.pump()
        XCTAssertFalse(pair.server.wantsToSend)
        _ = try RawFrames.ping().withUnsafeBytes { try pair.server.receive($0) }
        XCTAssertFalse(pair.server.wantsToSend, "a PING received: its answer held for the next frames")
        pair.server.releasePingAnswers()
        XCTAssertTrue(pair.server.wantsToSend, "its answer released")
        try pair.pump()
        XCTAssertFalse(pair.server.wantsToSend)
        pair.server.goAway(.noError)
        XCTAssertTrue(pair.server.wantsToSend, "a GOAWAY queued")
    }

    func testBytesSplitIntoSingleBytesDecodeToTheSameEvents() throws {
        let pair = CodecPair()
        let id = try pair.client.submitRequest(HTTP2Head(method: "POST", scheme: "http", authority: "a.test", path: "/"), endStream: false)
        Array(repeating: UInt8(7), count: 300).withUnsafeBytes { pair.client.sendBody(stream: id, $0) }
        pair.client.endBody(stream: id, trailers: HTTPFields([HTTPField(name: "x-sum", value: "2100")]))
        var events: [HTTP2Event] = []
        for byte in try pair.output(of: pair.client).0 {
            events += try [byte].withUnsafeBytes { try pair.server.receive($0) }
        }
        let data = events.compactMap { if case .data(_, let bytes) = $0 { bytes } else { nil } }.joined()
        XCTAssertEqual(Array(data), Array(repeating: 7, count: 300))
        XCTAssertEqual(events.filter { if case .data = $0 { false } else if case .settings = $0 { false } else { true } }, [
            .head(stream: id, HTTP2Head(method: "POST", scheme: "http", authority: "a.test", path: "/")),
            .trailers(stream: id, HTTPFields([HTTPField(name: "x-sum", value: "2100")])),
            .end(stream: id),
        ])
    }

    func testAStreamThatIsNotDrainedHoldsNoMoreThanItsWindow() throws {
        // (Until the server's SETTINGS arrive the client may send RFC 9113's default 65,535
        // bytes; a window above that is exact from the start.)
        let pair = CodecPair(server: HTTP2Settings(streamWindow: 128 * 1024, connectionWindow: 1024 * 1024))
        let id = try pair.client.submitRequest(HTTP2Head(method: "POST", scheme: "http", authority: "a.test", path: "/up"), endStream: false)
        let body = (0..<(1024 * 1024)).map { UInt8(truncatingIfNeeded: $0 &* 31) }
        body.withUnsafeBytes { pair.client.sendBody(stream: id, $0) }
        pair.client.endBody(stream: id)
        try pair.pump()
        // The server's consumer has moved nothing on: 128 KiB arrived, the rest waits at the client.
        XCTAssertEqual(pair.receivedBody(id), 128 * 1024)
        XCTAssertEqual(pair.client.bufferedBody(stream: id), body.count - 128 * 1024)
        // Draining in steps opens the window by as much each time, until all of it arrived whole.
        var received = pair.serverData(id)
        for _ in 0..<100 where received.count < body.count {
            pair.server.consumed(stream: id, count: pair.receivedBody(id))
            pair.serverEvents.removeAll()
            try pair.pump()
            received += pair.serverData(id)
        }
        XCTAssertEqual(received, body)
        XCTAssertTrue(pair.serverEvents.contains(.end(stream: id)))
    }

    func testAnInterimResponseComesBeforeTheFinalOne() throws {
        let pair = CodecPair()
        let id = try pair.client.submitRequest(HTTP2Head(method: "POST", scheme: "http", authority: "a.test", path: "/",
                                                         fields: HTTPFields([HTTPField(name: "expect", value: "100-continue")])),
                                               endStream: false)
        try pair.pump()
        try pair.server.submitResponse(stream: id, HTTP2Head(status: 100), endStream: false)
        try pair.server.submitResponse(stream: id, HTTP2Head(status: 204), endStream: true)
        try pair.pump()
        XCTAssertEqual(pair.clientEvents, [.head(stream: id, HTTP2Head(status: 100)), .head(stream: id, HTTP2Head(status: 204)), .end(stream: id)])
    }

    func testAResetFromThePeerEndsOnlyItsStream() throws {
        let pair = CodecPair()
        let first = try pair.client.submitRequest(HTTP2Head(method: "GET", scheme: "http", authority: "a.test", path: "/1"), endStream: false)
        let second = try pair.client.submitRequest(HTTP2Head(method: "GET", scheme: "http", authority: "a.test", path: "/2"), endStream: true)
        try pair.pump()
        pair.client.reset(stream: first, .cancel)
        pair.serverEvents.removeAll()
        try pair.pump()
        XCTAssertEqual(pair.serverEvents, [.reset(stream: first, .cancel), .closed(stream: first, .cancel)])
        try pair.server.submitResponse(stream: second, HTTP2Head(status: 200), endStream: true)
        try pair.pump()
        XCTAssertEqual(pair.clientEvents.suffix(3), [.head(stream: second, HTTP2Head(status: 200)), .end(stream: second), .closed(stream: second, .noError)])
    }

    func testGoAwayTellsTheClientWhichStreamsWereTaken() throws {
        let pair = CodecPair()
        let id = try pair.client.submitRequest(HTTP2Head(method: "GET", scheme: "http", authority: "a.test", path: "/"), endStream: true)
        try pair.pump()
        pair.server.goAway(.noError)
        try pair.pump()
        XCTAssertEqual(pair.clientEvents, [.goAway(lastStream: id, .noError)])
        // The stream taken before the GOAWAY still completes.
        try pair.server.submitResponse(stream: id, HTTP2Head(status: 200), endStream: true)
        try pair.pump()
        XCTAssertTrue(pair.clientEvents.contains(.closed(stream: id, .noError)))
    }

    func testARequestWhoseHeadWasStillQueuedWhenAGoAwayCameIsToldRefused() throws {
        // A request submitted and not yet sent when the peer's GOAWAY is read (its head queued
        // behind a full socket, or submitted in the turn the GOAWAY arrived in) never opens:
        // its consumer hears it was refused unprocessed, and may send it elsewhere.
        let pair = CodecPair()
        let first = try pair.client.submitRequest(HTTP2Head(method: "GET", scheme: "http", authority: "a.test", path: "/"), endStream: true)
        try pair.pump()
        pair.server.goAway(.noError)
        let (toClient, _) = try pair.output(of: pair.server)
        let late = try pair.client.submitRequest(HTTP2Head(method: "POST", scheme: "http", authority: "a.test", path: "/late"), endStream: false)
        Array("queued".utf8).withUnsafeBytes { pair.client.sendBody(stream: late, $0) }
        pair.clientEvents += try toClient.withUnsafeBytes { try pair.client.receive($0) }.filter { !$0.isSettings }
        try pair.pump()
        XCTAssertTrue(pair.clientEvents.contains(.closed(stream: late, .refusedStream)), "\(pair.clientEvents)")
        XCTAssertFalse(pair.serverEvents.contains(where: { event in
            if case .head(late, _) = event { return true }
            if case .data(late, _) = event { return true }
            return false
        }), "\(pair.serverEvents)")
        XCTAssertEqual(pair.client.bufferedBody(stream: late), 0)
        // The stream taken before the GOAWAY still completes.
        try pair.server.submitResponse(stream: first, HTTP2Head(status: 200), endStream: true)
        try pair.pump()
        XCTAssertTrue(pair.clientEvents.contains(.closed(stream: first, .noError)), "\(pair.clientEvents)")
    }

    func testTheServerAdvertisesItsLimitsAndTheClientLearnsThem() throws {
        let server = HTTP2Codec(role: .server, settings: HTTP2Settings(maxConcurrentStreams: 7))
        let client = HTTP2Codec(role: .client)
        XCTAssertEqual(client.peerMaxConcurrentStreams, 100, "RFC 9113's initial assumption, as nghttp2 takes it")
        let events = try output(of: server).withUnsafeBytes { try client.receive($0) }
        XCTAssertEqual(events, [.settings(maxConcurrentStreams: 7)])
        XCTAssertEqual(client.peerMaxConcurrentStreams, 7)
    }

    // MARK: - hostile and broken peers

    func testABadPrefaceFailsTheConnection() throws {
        let server = HTTP2Codec(role: .server)
        let request = Array("GET / HTTP/1.1\r\nHost: a\r\n\r\n".utf8)
        XCTAssertThrowsError(try request.withUnsafeBytes { try server.receive($0) })
        XCTAssertFalse(server.isActive, "nothing more is read or sent but what is queued")
    }

    func testMalformedRequestsAreResetAndNeverDelivered() throws {
        // RFC 9113 §8.2–8.3: each of these is malformed; the stream is reset with
        // PROTOCOL_ERROR and no head reaches the consumer.
        let cases: [(String, [(String, String)])] = [
            ("an uppercase name", [("X-Token", "a")]),
            ("connection", [("connection", "keep-alive")]),
            ("transfer-encoding", [("transfer-encoding", "chunked")]),
            ("keep-alive", [("keep-alive", "timeout=5")]),
            ("upgrade", [("upgrade", "h2c")]),
            ("proxy-connection", [("proxy-connection", "close")]),
            ("te other than trailers", [("te", "gzip")]),
            ("a CR LF in a value", [("x-a", "b\r\nx-injected: 1")]),
            ("a LF in a value", [("x-a", "b\nc")]),
            ("a NUL in a value", [("x-a", "b\u{0}c")]),
            ("another control character in a value", [("x-a", "b\u{01}c")]),
            ("a DEL in a value", [("x-a", "b\u{7F}c")]),
            ("a space before a value", [("x-a", " b")]),
            ("a tab after a value", [("x-a", "b\t")]),
            ("a space in a name", [("x a", "b")]),
            ("a colon in a name", [("x:a", "b")]),
            ("a pseudo-header after a regular field", [("x-a", "b"), (":protocol", "websocket")]),
            ("a duplicated pseudo-header", [(":path", "/again")]),
            ("an unknown pseudo-header", [(":token", "t")]),
        ]
        for (what, extra) in cases {
            let server = HTTP2Codec(role: .server)
            var frames = RawFrames.preface()
            frames += RawFrames.headers(stream: 1, endStream: true, fields: RawFrames.getRequest + extra)
            var events = try frames.withUnsafeBytes { try server.receive($0) }
            // Told as it is read, before anything is sent (a budget on them must not lag).
            XCTAssertEqual(events.last, .malformed(stream: 1), what)
            var sent: [UInt8] = []
            events += try server.send { sent += $0 }
            XCTAssertFalse(events.contains { if case .head = $0 { true } else { false } }, what)
            XCTAssertTrue(events.contains(.closed(stream: 1, .protocolError)), "\(what): \(events)")
            XCTAssertTrue(try RawFrames.resets(in: sent).contains(where: { $0 == (1, HTTP2ErrorCode.protocolError.rawValue) }), what)
        }
    }

    func testMissingPseudoHeadersAreRefused() throws {
        for missing in [":method", ":scheme", ":path"] {
            let server = HTTP2Codec(role: .server)
            var frames = RawFrames.preface()
            frames += RawFrames.headers(stream: 1, endStream: true, fields: RawFrames.getRequest.filter { $0.0 != missing })
            let events = try frames.withUnsafeBytes { try server.receive($0) }
            XCTAssertEqual(events.last, .malformed(stream: 1), missing)
            XCTAssertFalse(events.contains { if case .head = $0 { true } else { false } }, missing)
        }
    }

    func testAContentLengthThatDisagreesWithTheDataResetsTheStream() throws {
        for (declared, sent) in [(10, 11), (10, 9), (0, 1)] {
            let server = HTTP2Codec(role: .server)
            var frames = RawFrames.preface()
            frames += RawFrames.headers(stream: 1, endStream: false,
                                        fields: [(":method", "POST"), (":scheme", "http"), (":authority", "a.test"), (":path", "/"),
                                                 ("content-length", String(declared))])
            frames += RawFrames.data(stream: 1, endStream: true, Array(repeating: 0x61, count: sent))
            var events = try frames.withUnsafeBytes { try server.receive($0) }
            events += try server.send { _ in }
            XCTAssertEqual(events.filter { $0 == .malformed(stream: 1) }.count, 1, "\(declared) vs \(sent): \(events)")
            XCTAssertFalse(events.contains(.end(stream: 1)), "\(declared) vs \(sent)")
            XCTAssertTrue(events.contains(.closed(stream: 1, .protocolError)), "\(declared) vs \(sent): \(events)")
        }
    }

    func testStreamsBeyondTheAdvertisedLimitEndTheConnection() throws {
        let server = HTTP2Codec(role: .server, settings: HTTP2Settings(maxConcurrentStreams: 2))
        var frames = RawFrames.preface()
        _ = try output(of: server)
        frames += RawFrames.settingsAck()
        for stream in [1, 3, 5] as [Int32] {
            frames += RawFrames.headers(stream: stream, endStream: false, fields: RawFrames.getRequest)
        }
        let events = try frames.withUnsafeBytes { try server.receive($0) }
        let heads = events.compactMap { if case .head(let stream, _) = $0 { stream } else { nil } }
        XCTAssertEqual(heads, [1, 3])
        // nghttp2 makes it a connection error (RFC 9113 §5.1.2 allows a stream or a connection
        // error): a GOAWAY with PROTOCOL_ERROR naming stream 3 as the last one taken.
        let goAways = RawFrames.goAways(in: try output(of: server))
        XCTAssertTrue(goAways.contains(where: { $0 == (3, HTTP2ErrorCode.protocolError.rawValue) }), "\(goAways)")
        XCTAssertFalse(server.isActive)
    }

    func testAHeaderListOverItsLimitsIsReportedNotKept() throws {
        for (what, fields) in [("too many fields", (0..<101).map { ("x-f\($0)", "v") }),
                               ("too many bytes", [("x-big", String(repeating: "b", count: 2000))])] {
            let server = HTTP2Codec(role: .server, settings: HTTP2Settings(maxHeaderListSize: 1024))
            var frames = RawFrames.preface()
            frames += RawFrames.headers(stream: 1, endStream: true, fields: RawFrames.getRequest + fields)
            let events = try frames.withUnsafeBytes { try server.receive($0) }
            XCTAssertTrue(events.contains(.headTooLarge(stream: 1)), "\(what): \(events)")
            XCTAssertFalse(events.contains { if case .head = $0 { true } else { false } }, what)
            XCTAssertTrue(server.isActive, "\(what): the connection goes on")
        }
    }

    func testAHeaderBlockSplitAcrossContinuationFramesIsOneHead() throws {
        let server = HTTP2Codec(role: .server)
        var frames = RawFrames.preface()
        frames += RawFrames.headers(stream: 1, endStream: true, endHeaders: false, fields: RawFrames.getRequest)
        frames += RawFrames.continuation(stream: 1, endHeaders: false, fields: [("x-a", "1")])
        frames += RawFrames.continuation(stream: 1, endHeaders: true, fields: [("x-b", "2")])
        let events = try frames.withUnsafeBytes { try server.receive($0) }.filter { !$0.isSettings }
        XCTAssertEqual(events, [
            .head(stream: 1, HTTP2Head(method: "GET", scheme: "http", authority: "a.test", path: "/",
                                       fields: HTTPFields([HTTPField(name: "x-a", value: "1"), HTTPField(name: "x-b", value: "2")]))),
            .end(stream: 1),
        ])
    }

    func testABlockOverTheLimitsLeavesTheNextStreamsHeadIntact() throws {
        // One block is decoded at a time: the dropped one must not leak into the next.
        let server = HTTP2Codec(role: .server, settings: HTTP2Settings(maxHeaderListSize: 1024))
        var frames = RawFrames.preface()
        frames += RawFrames.headers(stream: 1, endStream: true, fields: RawFrames.getRequest + [("x-big", String(repeating: "b", count: 2000))])
        frames += RawFrames.headers(stream: 3, endStream: true, fields: RawFrames.getRequest + [("x-ok", "1")])
        let events = try frames.withUnsafeBytes { try server.receive($0) }.filter { !$0.isSettings }
        XCTAssertEqual(events, [
            .headTooLarge(stream: 1),
            .head(stream: 3, HTTP2Head(method: "GET", scheme: "http", authority: "a.test", path: "/",
                                       fields: HTTPFields([HTTPField(name: "x-ok", value: "1")]))),
            .end(stream: 3),
        ])
    }

    func testAResponseHeadReadInPlaceFromHTTP1LeavesOutWhatHTTP2Forbids() throws {
        let pair = CodecPair()
        let id = try pair.client.submitRequest(HTTP2Head(method: "GET", scheme: "http", authority: "a.test", path: "/"), endStream: true)
        try pair.pump()
        let head = Array(("HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nConnection: close, X-Hop\r\nX-Hop: 1\r\n"
                          + "Keep-Alive: timeout=5\r\nUpgrade: h2c\r\nProxy-Connection: x\r\nContent-Length: 0\r\nX-Keep: Yes\r\n\r\n").utf8)
        try head.withUnsafeBytes { bytes in
            let view = try ResponseHeadParser.view(bytes, requestMethod: "GET")
            try pair.server.submitResponse(stream: id, status: view.status, fields: view.section, omitting: "content-length", endStream: true)
        }
        try pair.pump()
        XCTAssertEqual(pair.clientEvents.first, .head(stream: id, HTTP2Head(status: 200, fields: HTTPFields([
            HTTPField(name: "content-type", value: "text/plain"), HTTPField(name: "x-keep", value: "Yes"),
        ]))), "names lowercased, values as they were; connection-specific fields, those Connection names and the omitted one left out")
        XCTAssertTrue(pair.clientEvents.contains(.end(stream: id)))
    }

    func testAContinuationFloodEndsTheConnection() throws {
        let server = HTTP2Codec(role: .server)
        var frames = RawFrames.preface()
        frames += RawFrames.headers(stream: 1, endStream: true, endHeaders: false, fields: [(":method", "GET")])
        for _ in 0..<20 { frames += RawFrames.continuation(stream: 1, endHeaders: false, fields: [("x-a", "b")]) }
        XCTAssertThrowsError(try frames.withUnsafeBytes { try server.receive($0) }) { error in
            XCTAssertTrue((error as? HTTP2CodecError)?.isContinuationFlood == true, "\(error)")
        }
    }

    func testResetsAPeerProvokesAreToldAsProvoked() throws {
        // MadeYouReset (CVE-2025-8671): valid requests, each followed by a frame that makes the
        // server reset the stream (a WINDOW_UPDATE past 2^31-1: FLOW_CONTROL_ERROR).
        let server = HTTP2Codec(role: .server)
        var frames = RawFrames.preface()
        for stream in [1, 3] as [Int32] {
            frames += RawFrames.headers(stream: stream, endStream: true, fields: RawFrames.getRequest)
            frames += RawFrames.windowUpdate(stream: stream, increment: 0x7fff_ffff)
        }
        var events = try frames.withUnsafeBytes { try server.receive($0) }
        var sent: [UInt8] = []
        events += try server.send { sent += $0 }
        XCTAssertEqual(events.filter { if case .provokedReset = $0 { true } else { false } },
                       [.provokedReset(stream: 1), .provokedReset(stream: 3)], "\(events)")
        XCTAssertEqual(try RawFrames.resets(in: sent).map(\.0), [1, 3])
        XCTAssertTrue(server.isActive, "stream errors: the connection goes on")
        // A zero WINDOW_UPDATE or DATA after END_STREAM: nghttp2 1.52 ends the connection (GOAWAY).
        let other = HTTP2Codec(role: .server)
        frames = RawFrames.preface() + RawFrames.headers(stream: 1, endStream: true, fields: RawFrames.getRequest)
            + RawFrames.windowUpdate(stream: 1, increment: 0)
        events = (try? frames.withUnsafeBytes { try other.receive($0) }) ?? []
        sent = []
        _ = try? other.send { sent += $0 }
        XCTAssertEqual(RawFrames.goAways(in: sent).map(\.1), [HTTP2ErrorCode.protocolError.rawValue])
        XCTAssertFalse(other.isActive)
    }

    func testSendRoomFollowsThePeersWindowsAndNeverGoesBelowZero() throws {
        let server = HTTP2Codec(role: .server)
        var frames = RawFrames.preface() + RawFrames.headers(stream: 1, endStream: true, fields: RawFrames.getRequest)
        _ = try frames.withUnsafeBytes { try server.receive($0) }
        try server.submitResponse(stream: 1, HTTP2Head(status: 200), endStream: false)
        // RFC 9113's default window (65,535), under the limit asked for.
        XCTAssertEqual(server.sendRoom(stream: 1, limit: 1 << 20), 65_535)
        XCTAssertEqual(server.sendRoom(stream: 1, limit: 16_384), 16_384)
        Array(repeating: UInt8(1), count: 1000).withUnsafeBytes { server.sendBody(stream: 1, $0) }
        XCTAssertEqual(server.sendRoom(stream: 1, limit: 1 << 20), 64_535, "what is queued counts")
        // The app shrinks its windows to zero (SETTINGS_INITIAL_WINDOW_SIZE 0) with 1,000 bytes
        // queued: no room, and not a negative one.
        frames = RawFrames.settings([(4, 0)])
        _ = try frames.withUnsafeBytes { try server.receive($0) }
        XCTAssertEqual(server.sendRoom(stream: 1, limit: 1 << 20), 0)
    }

    /// A request submitted with a body to come: before its HEADERS go (nghttp2 opens the stream
    /// only then) it has the peer's initial window, so its body and end queued at once leave
    /// with its head in one write, the end on the DATA frame (no empty DATA after it).
    func testARequestsBodyQueuedBeforeItsHeadWentLeavesWithItInOneWrite() throws {
        let pair = CodecPair(server: HTTP2Settings(streamWindow: 1000))
        try pair.pump()  // the settings, both ways
        let id = try pair.client.submitRequest(HTTP2Head(method: "POST", scheme: "http", authority: "api.test", path: "/u"),
                                               endStream: false)
        XCTAssertEqual(pair.client.sendRoom(stream: id, limit: 1 << 20), 1000, "the peer's initial window, not 0")
        XCTAssertEqual(pair.client.sendRoom(stream: id, limit: 100), 100)
        XCTAssertEqual(pair.client.sendRoom(stream: id + 2, limit: 1 << 20), 0, "a stream never submitted has none")
        let body = Array("hello".utf8)
        body.withUnsafeBytes { pair.client.sendBody(stream: id, $0) }
        XCTAssertEqual(pair.client.sendRoom(stream: id, limit: 1 << 20), 995, "what is queued counts")
        pair.client.endBody(stream: id)
        let (written, _) = try pair.output(of: pair.client)
        let kinds = RawFrames.frames(in: written).map { ($0.type, $0.flags & 1, $0.stream) }
        XCTAssertTrue(kinds.contains { $0 == (1, 0, id) }, "HEADERS without END_STREAM: \(kinds)")
        XCTAssertTrue(kinds.contains { $0 == (0, 1, id) }, "DATA with END_STREAM, in the same write: \(kinds)")
        XCTAssertEqual(kinds.filter { $0.0 == 0 }.count, 1, "one DATA frame: \(kinds)")
    }

    /// A request reset before its HEADERS went out (its client left at once): what was queued
    /// for it goes (nghttp2 calls no close back for a stream it never opened), and the
    /// connection goes on with the next request.
    func testARequestResetBeforeItsHeadWentOutKeepsNothingQueued() throws {
        let pair = CodecPair()
        try pair.pump()
        let id = try pair.client.submitRequest(HTTP2Head(method: "POST", scheme: "http", authority: "api.test", path: "/u"),
                                               endStream: false)
        Array(repeating: UInt8(7), count: 1000).withUnsafeBytes { pair.client.sendBody(stream: id, $0) }
        XCTAssertEqual(pair.client.bufferedBody(stream: id), 1000)
        pair.client.reset(stream: id, .cancel)
        XCTAssertFalse(pair.client.isSendingBody(stream: id), "nothing of it is kept")
        XCTAssertEqual(pair.client.bufferedBody(stream: id), 0)
        XCTAssertEqual(pair.client.explainedResets, [], "no explanation waits for a close that never comes")
        try pair.pump()
        XCTAssertFalse(pair.serverEvents.contains { if case .head = $0 { return true } else { return false } },
                       "the request never reached the server: \(pair.serverEvents)")
        let next = try pair.client.submitRequest(HTTP2Head(method: "GET", scheme: "http", authority: "api.test", path: "/n"),
                                                 endStream: true)
        try pair.pump()
        XCTAssertTrue(pair.serverEvents.contains { if case .head(next, _) = $0 { return true } else { return false } })
        XCTAssertTrue(pair.client.isActive)
    }

    func testEmptyDataAndPingsAreTold() throws {
        let server = HTTP2Codec(role: .server)
        var frames = RawFrames.preface()
        frames += RawFrames.headers(stream: 1, endStream: false, fields: [(":method", "POST"), (":scheme", "http"), (":authority", "a.test"), (":path", "/")])
        frames += RawFrames.data(stream: 1, endStream: false, [])
        frames += RawFrames.data(stream: 1, endStream: false, [])
        frames += RawFrames.ping()
        frames += RawFrames.data(stream: 1, endStream: true, [])
        let events = try frames.withUnsafeBytes { try server.receive($0) }
        XCTAssertEqual(events.filter { if case .emptyData = $0 { true } else if case .ping = $0 { true } else { false } },
                       [.emptyData(stream: 1), .emptyData(stream: 1), .ping], "an empty DATA that ends its stream is not one")
        XCTAssertTrue(events.contains(.end(stream: 1)))
    }

    func testOnlyHeadersAndDataSentAreToldAsMessageFramesAndOnlyOnce() throws {
        let pair = CodecPair()
        try pair.pump()
        XCTAssertFalse(pair.server.takeMessageFrameSent(), "SETTINGS and their acknowledgements are not messages")
        let id = try pair.client.submitRequest(HTTP2Head(method: "POST", scheme: "http", authority: "a.test", path: "/"), endStream: false)
        try pair.pump()
        XCTAssertTrue(pair.client.takeMessageFrameSent(), "the request's HEADERS")
        XCTAssertFalse(pair.client.takeMessageFrameSent(), "told once")
        XCTAssertFalse(pair.server.takeMessageFrameSent(), "the server sent nothing but a window")
        // A PING from the client: the server's answer (an ACK) is no message frame.
        _ = try RawFrames.ping().withUnsafeBytes { try pair.server.receive($0) }
        try pair.pump()
        XCTAssertFalse(pair.server.takeMessageFrameSent(), "a PING's ACK")
        try pair.server.submitResponse(stream: id, HTTP2Head(status: 200), endStream: false)
        try pair.pump()
        XCTAssertTrue(pair.server.takeMessageFrameSent(), "the response's HEADERS")
        Array("x".utf8).withUnsafeBytes { pair.server.sendBody(stream: id, $0) }
        try pair.pump()
        XCTAssertTrue(pair.server.takeMessageFrameSent(), "a DATA frame")
        XCTAssertFalse(pair.server.takeMessageFrameSent())
    }

    func testAPingsAnswerRidesInTheWriteOfTheNextFrames() throws {
        // A gRPC runtime's flow-control PING comes with its call: the answer goes out in the
        // write that carries the response, not in a write (and a wakeup of the peer) of its own.
        let pair = CodecPair()
        let id = try pair.client.submitRequest(HTTP2Head(method: "GET", scheme: "http", authority: "a.test", path: "/"), endStream: true)
        try pair.pump()
        _ = try RawFrames.ping(7).withUnsafeBytes { try pair.server.receive($0) }
        XCTAssertTrue(pair.server.holdsPingAnswers)
        XCTAssertEqual(try pair.output(of: pair.server).0, [], "nothing goes out for the PING alone")
        try pair.server.submitResponse(stream: id, HTTP2Head(status: 204), endStream: true)
        let (bytes, _) = try pair.output(of: pair.server)
        let frames = RawFrames.frames(in: bytes)
        XCTAssertEqual(frames.map(\.type), [6, 1], "the answer first, then the response's HEADERS, in one write")
        XCTAssertEqual(frames.first?.flags, 1, "an ACK")
        XCTAssertEqual(frames.first?.payload, [UInt8](repeating: 7, count: 8), "with the PING's payload")
        XCTAssertFalse(pair.server.holdsPingAnswers)
    }

    func testAHeldPingAnswerGoesAloneOnceReleasedAndAFewGoAtOnce() throws {
        let server = HTTP2Codec(role: .server)
        _ = try output(of: server)
        _ = try (RawFrames.preface() + RawFrames.ping(3)).withUnsafeBytes { try server.receive($0) }
        XCTAssertTrue(server.holdsPingAnswers)
        // What the connection's timer does when no frames came to ride with.
        server.releasePingAnswers()
        let alone = RawFrames.frames(in: try output(of: server)).filter { $0.type == 6 }
        XCTAssertEqual(alone.map(\.flags), [1])
        XCTAssertEqual(alone.first?.payload, [UInt8](repeating: 3, count: 8))
        // Pings in a row: their answers are queued once a few are held, each with its payload.
        var pings: [UInt8] = []
        for byte in 1...UInt8(HTTP2Codec.heldPingAnswerLimit) { pings += RawFrames.ping(byte) }
        _ = try pings.withUnsafeBytes { try server.receive($0) }
        XCTAssertFalse(server.holdsPingAnswers)
        XCTAssertTrue(server.wantsToSend)
        let answers = RawFrames.frames(in: try output(of: server)).filter { $0.type == 6 && $0.flags == 1 }
        XCTAssertEqual(answers.map { $0.payload.first }, (1...UInt8(HTTP2Codec.heldPingAnswerLimit)).map { $0 })
    }

    func testAPingSplitIntoSingleBytesIsHeldWholeAndAnsweredWithItsPayload() throws {
        let server = HTTP2Codec(role: .server)
        _ = try output(of: server)
        _ = try RawFrames.preface().withUnsafeBytes { try server.receive($0) }
        let ping = RawFrames.ping(9)
        for index in ping.indices.dropLast() {
            _ = try [ping[index]].withUnsafeBytes { try server.receive($0) }
            XCTAssertFalse(server.holdsPingAnswers, "no answer for part of a PING")
        }
        _ = try [ping[ping.count - 1]].withUnsafeBytes { try server.receive($0) }
        XCTAssertTrue(server.holdsPingAnswers)
        server.releasePingAnswers()
        let answers = RawFrames.frames(in: try output(of: server)).filter { $0.type == 6 }
        XCTAssertEqual(answers.map(\.flags), [1])
        XCTAssertEqual(answers.first?.payload, [UInt8](repeating: 9, count: 8))
    }

    func testPingsNeverReadAreAFloodThatEndsTheConnection() throws {
        let server = HTTP2Codec(role: .server)
        var frames = RawFrames.preface()
        for _ in 0..<2000 { frames += RawFrames.ping() }
        // Nothing is sent meanwhile (the peer does not read): nghttp2 stops at its queue limit.
        XCTAssertThrowsError(try frames.withUnsafeBytes { try server.receive($0) }) { error in
            XCTAssertTrue((error as? HTTP2CodecError)?.isFlood == true, "\(error)")
        }
    }

    func testAGoAwayFrameMadeByHandIsOneAPeerReads() throws {
        let frame = HTTP2Codec.goAwayFrame(lastStream: 201, .enhanceYourCalm)
        XCTAssertTrue(RawFrames.goAways(in: frame).elementsEqual([(Int32(201), HTTP2ErrorCode.enhanceYourCalm.rawValue)], by: ==))
        let client = HTTP2Codec(role: .client)
        _ = try output(of: client)
        let events = try (RawFrames.settings() + frame).withUnsafeBytes { try client.receive($0) }
        XCTAssertTrue(events.contains(.goAway(lastStream: 201, .enhanceYourCalm)), "\(events)")
    }

    func testDataForAResetStreamStillReopensTheConnectionWindow() throws {
        let pair = CodecPair(server: HTTP2Settings(streamWindow: 64 * 1024, connectionWindow: 128 * 1024))
        let first = try pair.client.submitRequest(HTTP2Head(method: "POST", scheme: "http", authority: "a.test", path: "/1"), endStream: false)
        Array(repeating: 1, count: 64 * 1024).withUnsafeBytes { pair.client.sendBody(stream: first, $0) }
        try pair.pump()
        // The consumer gives up on the stream (and reports what it held as moved on).
        pair.server.reset(stream: first, .cancel)
        pair.server.consumed(stream: first, count: pair.receivedBody(first))
        try pair.pump()
        // A second stream can still use the whole connection window, several times over.
        let second = try pair.client.submitRequest(HTTP2Head(method: "POST", scheme: "http", authority: "a.test", path: "/2"), endStream: false)
        let body = Array(repeating: UInt8(2), count: 512 * 1024)
        body.withUnsafeBytes { pair.client.sendBody(stream: second, $0) }
        pair.client.endBody(stream: second)
        var received = 0
        pair.serverEvents.removeAll()
        for _ in 0..<100 where !pair.serverEvents.contains(.end(stream: second)) {
            try pair.pump()
            let n = pair.receivedBody(second)
            received += n
            pair.server.consumed(stream: second, count: n)
            if !pair.serverEvents.contains(.end(stream: second)) { pair.serverEvents.removeAll() }
        }
        XCTAssertEqual(received, body.count)
    }

    private func output(of codec: HTTP2Codec) throws -> [UInt8] {
        var bytes: [UInt8] = []
        try codec.send { bytes += $0 }
        return bytes
    }
}
