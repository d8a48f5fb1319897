import Foundation
import HTTP1
import TokenManager
import Tracing
import XCTest
@testable import Proxy

/// The spans of one request and the trace fields its upstream gets, without sockets.
final class RequestTraceTests: XCTestCase {
    private let appParent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
    private let target = UpstreamTarget(host: "backend", port: 8080, tls: nil, poolKey: "backend|8080", allowsLinkLocal: false)

    private func parse(_ text: String) throws -> RequestHead {
        try Array(text.utf8).withUnsafeBytes { try RequestHeadParser.parse($0) }
    }

    private func decision(credential: (any Credential)? = nil) -> RouteDecision {
        RouteDecision(target: target, hostField: "backend:8080", credential: credential, routeName: "api.test:80")
    }

    private func upstreamFields(_ head: RequestHead, _ rewrite: TraceFieldRewrite?) -> [String] {
        let out = String(decoding: RequestRewriter.head(for: head, decision: decision(), token: nil, trace: rewrite), as: UTF8.self)
        return out.components(separatedBy: "\r\n").filter { $0.lowercased().hasPrefix("trace") }
    }

    /// The next attempt, as the session starts one: its rewrite, and the recording told.
    private func attempt(_ propagation: inout TracePropagation, _ trace: RequestTrace?) -> TraceFieldRewrite {
        let rewrite = propagation.nextAttempt()
        trace?.attemptStarted(rewrite.traceParent, number: propagation.attempts)
        return rewrite
    }

    func testTheAppsSpanIsTheParentAndTheUpstreamsParentIsTheAttempt() throws {
        let sink = CollectingSink()
        let tracer = Tracer(sampler: .parentBased(root: .alwaysOff), sink: sink)
        var ids = IDGenerator(seed: (1, 2, 3, 4))
        let head = try parse("GET http://api.test/orders?secret=1 HTTP/1.1\r\nHost: api.test\r\ntraceparent: \(appParent)\r\n"
                             + "tracestate: congo=t61rcWkgMzE\r\nbaggage: user=alice\r\n\r\n")
        var (propagation, recording) = RequestTrace.start(head, tracer: tracer, ids: &ids)
        let trace = try XCTUnwrap(recording, "the app's sampled flag is honoured although the root sampler is off")
        XCTAssertEqual(trace.server.traceID.hex, "4bf92f3577b34da6a3ce929d0e0e4736")
        let rewrite = attempt(&propagation, trace)
        XCTAssertEqual(upstreamFields(head, rewrite), ["tracestate: congo=t61rcWkgMzE", "traceparent: \(TraceParent.string(rewrite.traceParent))"])
        XCTAssertEqual(rewrite.traceParent.traceID, trace.server.traceID)
        XCTAssertNotEqual(rewrite.traceParent.spanID, trace.server.spanID)
        trace.end(head: head, route: "api.test:80", credential: nil, target: target, status: 200, error: nil)
        recording = nil
        let spans = sink.spans
        XCTAssertEqual(spans.count, 2)
        let client = try XCTUnwrap(spans.first { $0.kind == .client })
        let server = try XCTUnwrap(spans.first { $0.kind == .server })
        XCTAssertEqual(server.parentSpanID?.hex, "00f067aa0ba902b7")
        XCTAssertTrue(server.parentIsRemote)
        XCTAssertEqual(server.traceState, "congo=t61rcWkgMzE")
        XCTAssertEqual(client.parentSpanID, server.context.spanID)
        XCTAssertEqual(client.context, rewrite.traceParent)
        XCTAssertEqual(server.attributes.first { $0.key == "url.path" }?.value, .string("/orders"), "never the query")
        XCTAssertEqual(client.attributes.first { $0.key == "url.full" }?.value, .string("http://backend:8080/orders"))
        XCTAssertEqual(server.attributes.first { $0.key == "http.response.status_code" }?.value, .int(200))
        XCTAssertEqual(server.status, .unset)
        XCTAssertFalse(spans.contains { $0.attributes.contains { "\($0.value)".contains("alice") || "\($0.value)".contains("secret") } })
    }

    func testWithoutAValidParentANewTraceStartsAndTheAppsTraceStateIsDropped() throws {
        let tracer = Tracer(sampler: .alwaysOn, sink: CollectingSink())
        var ids = IDGenerator(seed: (5, 6, 7, 8))
        for parent in ["traceparent: 00-zz\r\n", "traceparent: \(appParent)\r\ntraceparent: \(appParent)\r\n", ""] {
            let head = try parse("GET / HTTP/1.1\r\nHost: api.test\r\n\(parent)tracestate: congo=t61rcWkgMzE\r\n\r\n")
            var (propagation, trace) = RequestTrace.start(head, tracer: tracer, ids: &ids)
            XCTAssertNil(trace?.parent)
            XCTAssertNotEqual(trace?.server.traceID.hex, "4bf92f3577b34da6a3ce929d0e0e4736")
            let rewrite = attempt(&propagation, trace)
            XCTAssertEqual(upstreamFields(head, rewrite), ["traceparent: \(TraceParent.string(rewrite.traceParent))"], parent)
        }
    }

    func testWithTracingOffTheTraceFieldsPassUntouched() throws {
        let head = try parse("GET / HTTP/1.1\r\nHost: api.test\r\ntraceparent: \(appParent)\r\ntracestate: a=b\r\n\r\n")
        XCTAssertEqual(upstreamFields(head, nil), ["traceparent: \(appParent)", "tracestate: a=b"])
        XCTAssertFalse(TracePropagation().active)
    }

    func testAnUnsampledTraceRecordsNothingButStillPropagatesItsDecision() throws {
        let sink = CollectingSink()
        let tracer = Tracer(sampler: .parentBased(root: .alwaysOn), sink: sink)
        var ids = IDGenerator()
        let head = try parse("GET / HTTP/1.1\r\nHost: api.test\r\ntraceparent: 00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00\r\n\r\n")
        var (propagation, trace) = RequestTrace.start(head, tracer: tracer, ids: &ids)
        XCTAssertNil(trace, "nothing is recorded for an unsampled trace")
        XCTAssertTrue(propagation.active)
        let rewrite = attempt(&propagation, trace)
        XCTAssertFalse(rewrite.traceParent.sampled)
        XCTAssertEqual(rewrite.traceParent.traceID.hex, "4bf92f3577b34da6a3ce929d0e0e4736")
        XCTAssertTrue(TraceParent.string(rewrite.traceParent).hasSuffix("-00"))
        RequestTrace.refused(head: head, tracer: tracer, ids: &ids, status: 403, error: "destination_not_found")
        XCTAssertTrue(sink.spans.isEmpty)
    }

    func testEachAttemptHasItsOwnSpanId() {
        let server = SpanContext(traceID: TraceID(high: 1, low: 2), spanID: SpanID(42), sampled: true)
        var propagation = TracePropagation(server: server, keepTraceState: false)
        let ids = (0..<100).map { _ in propagation.nextAttempt().traceParent.spanID }
        XCTAssertEqual(Set(ids).count, 100)
        XCTAssertFalse(ids.contains(server.spanID))
        XCTAssertTrue(ids.allSatisfy(\.isValid))
    }

    func testAReplayIsASecondClientSpanWithAnEventAndTheWaitLinksToTheFetch() throws {
        let sink = CollectingSink()
        let tracer = Tracer(sampler: .alwaysOn, sink: sink)
        var ids = IDGenerator()
        let head = try parse("GET /x HTTP/1.1\r\nHost: api.test\r\n\r\n")
        var (propagation, recording) = RequestTrace.start(head, tracer: tracer, ids: &ids)
        let trace = try XCTUnwrap(recording)
        let fetch = SpanContext(traceID: ids.traceID(), spanID: ids.spanID(), sampled: true)
        trace.tokenWaitStarted()
        trace.tokenWaitEnded(AccessToken(value: "first", fetchSpan: fetch))
        let first = attempt(&propagation, trace)
        trace.endAttempt(method: "GET", target: target, path: "/x", status: 401, error: nil)
        trace.resent("token_sidecar.replay", reason: "401")
        trace.tokenWaitStarted()
        let refetch = SpanContext(traceID: ids.traceID(), spanID: ids.spanID(), sampled: true)
        trace.tokenWaitEnded(AccessToken(value: "second", fetchSpan: refetch))
        let second = attempt(&propagation, trace)
        trace.end(head: head, route: "r", credential: "api", target: target, status: 200, error: nil)
        recording = nil
        let clients = sink.spans.filter { $0.kind == .client }
        XCTAssertEqual(clients.map(\.context), [first.traceParent, second.traceParent])
        XCTAssertEqual(clients[0].attributes.first { $0.key == "http.response.status_code" }?.value, .int(401))
        XCTAssertEqual(clients[0].status, .error("401"))
        XCTAssertEqual(clients[1].attributes.first { $0.key == "http.request.resend_count" }?.value, .int(1))
        XCTAssertEqual(clients[1].status, .unset, "the replay's 200 is no error")
        XCTAssertNil(clients[1].attributes.first { $0.key == "error.type" })
        let server = try XCTUnwrap(sink.spans.first { $0.kind == .server })
        XCTAssertEqual(server.events.map(\.name), ["token_sidecar.replay"])
        XCTAssertEqual(server.links.map(\.context), [fetch, refetch])
        guard case .double(let waited)? = server.attributes.first(where: { $0.key == "token_sidecar.token.wait" })?.value else {
            return XCTFail("no token wait")
        }
        XCTAssertGreaterThanOrEqual(waited, 0)
        XCTAssertEqual(server.attributes.first { $0.key == "token_sidecar.credential" }?.value, .string("api"))
    }

    func testAProxyErrorEndsTheAttemptAndMarksBothSpans() throws {
        let sink = CollectingSink()
        let tracer = Tracer(sampler: .alwaysOn, sink: sink)
        var ids = IDGenerator()
        let head = try parse("GET /x HTTP/1.1\r\nHost: api.test\r\n\r\n")
        var (propagation, recording) = RequestTrace.start(head, tracer: tracer, ids: &ids)
        let trace = try XCTUnwrap(recording)
        _ = attempt(&propagation, trace)
        trace.end(head: head, route: "r", credential: nil, target: target, status: 502, error: "connection_refused")
        recording = nil
        let client = try XCTUnwrap(sink.spans.first { $0.kind == .client })
        let server = try XCTUnwrap(sink.spans.first { $0.kind == .server })
        XCTAssertEqual(client.status, .error("connection_refused"))
        XCTAssertEqual(server.status, .error("connection_refused"))
        XCTAssertEqual(server.attributes.first { $0.key == "error.type" }?.value, .string("connection_refused"))
    }

    func testARefusedRequestIsAServerSpanOfItsOwn() throws {
        let sink = CollectingSink()
        let tracer = Tracer(sampler: .alwaysOn, sink: sink)
        var ids = IDGenerator()
        let head = try parse("GET http://nowhere.test/ HTTP/1.1\r\nHost: nowhere.test\r\ntraceparent: \(appParent)\r\n\r\n")
        RequestTrace.refused(head: head, tracer: tracer, ids: &ids, status: 403, error: "destination_not_found")
        let span = try XCTUnwrap(sink.spans.first)
        XCTAssertEqual(span.kind, .server)
        XCTAssertEqual(span.parentSpanID?.hex, "00f067aa0ba902b7")
        XCTAssertEqual(span.status, .unset, "a 4xx is the client's")
        XCTAssertEqual(span.attributes.first { $0.key == "error.type" }?.value, .string("destination_not_found"))
        XCTAssertEqual(span.attributes.first { $0.key == "server.address" }?.value, .string("nowhere.test"))
    }
}

/// Keeps every span submitted (any thread).
final class CollectingSink: SpanSink, @unchecked Sendable {
    private let lock = NSLock()
    private var collected: [SpanRecord] = []

    func submit(_ span: SpanRecord) {
        lock.lock()
        collected.append(span)
        lock.unlock()
    }

    var spans: [SpanRecord] {
        lock.lock()
        defer { lock.unlock() }
        return collected
    }
}
