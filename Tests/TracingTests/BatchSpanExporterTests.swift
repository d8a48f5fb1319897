import EventLoop
import Foundation
import Logging
import TestSupport
import TokenManager
import XCTest
@testable import TraceExport
@testable import Tracing

/// The exporter against the OTLP receiver fixture, which decodes with the official
/// opentelemetry-proto schema: what a collector would see.
final class BatchSpanExporterTests: XCTestCase {
    private var thread: LoopThread!

    override func setUpWithError() throws {
        EventLoop.enableThreads()
        thread = try LoopThread { _ in }
        try thread.start()
    }

    override func tearDown() {
        thread.stopAndJoin()
        thread = nil
    }

    private func receiver(_ arguments: [String] = []) throws -> FixtureProcess {
        try FixtureProcess(script: "ProxyTests/Fixtures/otlp_receiver.py", arguments: ["--dir", "{dir}"] + arguments,
                           python: OTelPython.path)
    }

    private func exporter(port: Int, gzip: Bool = true, queue: Int = 2048, batch: Int = 512, delay: Duration = .milliseconds(100),
                          headers: [(name: String, value: String)] = []) throws -> BatchSpanExporter {
        let settings = BatchSpanExporter.Settings(
            endpoint: try TokenEndpoint(url: "http://127.0.0.1:\(port)/v1/traces"), headers: headers, gzip: gzip,
            timeout: .seconds(5), maxQueueSize: queue, maxExportBatchSize: batch, scheduleDelay: delay)
        let encoder = OTLPTraceEncoder(resource: [SpanAttribute("service.name", .string("sidecar-under-test"))], scopeVersion: "9.9")
        return BatchSpanExporter(settings: settings, encoder: encoder, loop: thread.loop, logger: Logger(label: "test"))
    }

    /// `count` sampled spans of new traces, submitted to `exporter`.
    private func submitSpans(_ count: Int, to exporter: BatchSpanExporter) {
        var ids = IDGenerator()
        for _ in 0..<count {
            exporter.submit(SpanRecord(context: SpanContext(traceID: ids.traceID(), spanID: ids.spanID(), sampled: true), parentSpanID: nil,
                                       name: "GET", kind: .server, startNanos: 1, endNanos: 2))
        }
    }

    private func spans(_ fixture: FixtureProcess, count: Int) -> [[String: Any]] {
        var found: [[String: Any]] = []
        _ = eventually(timeout: .seconds(10)) {
            found = fixture.jsonLines("spans.jsonl")
            return found.count >= count
        }
        return found
    }

    func testEverySpanFieldArrivesAsTheSchemaDecodesIt() throws {
        let fixture = try receiver()
        let exporter = try exporter(port: fixture.port, headers: [("x-api-key", "sentinel-header-value")])
        exporter.start()
        var ids = IDGenerator(seed: (11, 12, 13, 14))
        let parent = try XCTUnwrap(TraceParent.parse("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"))
        let server = SpanContext(traceID: parent.traceID, spanID: ids.spanID(), sampled: true)
        let fetch = SpanContext(traceID: ids.traceID(), spanID: ids.spanID(), sampled: true)
        exporter.submit(SpanRecord(
            context: server, traceState: "congo=t61rcWkgMzE", parentSpanID: parent.spanID, parentIsRemote: true, name: "GET", kind: .server,
            startNanos: 1_700_000_000_000_000_000, endNanos: 1_700_000_000_250_000_000,
            attributes: [SpanAttribute("http.request.method", .string("GET")), SpanAttribute("http.response.status_code", .int(200)),
                         SpanAttribute("token_sidecar.token.wait", .double(0.25)), SpanAttribute("token_sidecar.shared_cache", .bool(false))],
            events: [SpanEvent(timeNanos: 1_700_000_000_100_000_000, name: "replay", attributes: [SpanAttribute("reason", .string("401"))])],
            links: [SpanLink(context: fetch, attributes: [SpanAttribute("token_sidecar.link", .string("token fetch"))])]))
        exporter.submit(SpanRecord(context: fetch, parentSpanID: nil, name: "token fetch", kind: .client,
                                   startNanos: 1_700_000_000_000_000_001, endNanos: 1_700_000_000_000_000_002,
                                   status: .error("invalid_client")))
        let got = spans(fixture, count: 2)
        XCTAssertEqual(got.count, 2)
        let first = try XCTUnwrap(got.first)
        XCTAssertEqual(first["trace_id"] as? String, "4bf92f3577b34da6a3ce929d0e0e4736")
        XCTAssertEqual(first["span_id"] as? String, server.spanID.hex)
        XCTAssertEqual(first["parent_span_id"] as? String, "00f067aa0ba902b7")
        XCTAssertEqual(first["trace_state"] as? String, "congo=t61rcWkgMzE")
        XCTAssertEqual(first["name"] as? String, "GET")
        XCTAssertEqual(first["kind"] as? String, "SPAN_KIND_SERVER")
        XCTAssertEqual((first["start_ns"] as? NSNumber)?.uint64Value, 1_700_000_000_000_000_000)
        XCTAssertEqual((first["end_ns"] as? NSNumber)?.uint64Value, 1_700_000_000_250_000_000)
        let attributes = try XCTUnwrap(first["attributes"] as? [String: Any])
        XCTAssertEqual(attributes["http.request.method"] as? String, "GET")
        XCTAssertEqual(attributes["http.response.status_code"] as? Int, 200)
        XCTAssertEqual(attributes["token_sidecar.token.wait"] as? Double, 0.25)
        XCTAssertEqual(attributes["token_sidecar.shared_cache"] as? Bool, false)
        let event = try XCTUnwrap((first["events"] as? [[String: Any]])?.first)
        XCTAssertEqual(event["name"] as? String, "replay")
        XCTAssertEqual((event["attributes"] as? [String: Any])?["reason"] as? String, "401")
        let link = try XCTUnwrap((first["links"] as? [[String: Any]])?.first)
        XCTAssertEqual(link["trace_id"] as? String, fetch.traceID.hex)
        XCTAssertEqual(link["span_id"] as? String, fetch.spanID.hex)
        XCTAssertEqual((first["resource"] as? [String: Any])?["service.name"] as? String, "sidecar-under-test")
        XCTAssertEqual((first["scope"] as? [String: Any])?["name"] as? String, "token-sidecar")
        XCTAssertEqual(((first["flags"] as? NSNumber)?.intValue ?? 0) & 0x301, 0x301, "sampled, with a remote parent")
        let second = got[1]
        XCTAssertEqual(second["parent_span_id"] as? String, "")
        XCTAssertEqual(second["kind"] as? String, "SPAN_KIND_CLIENT")
        XCTAssertEqual((second["status"] as? [String: Any])?["code"] as? String, "STATUS_CODE_ERROR")
        XCTAssertEqual((second["status"] as? [String: Any])?["message"] as? String, "invalid_client")
        // The receiver logs the request once it has answered (its spans before): wait for the line.
        XCTAssertTrue(eventually { !fixture.jsonLines("requests.jsonl").isEmpty })
        let request = try XCTUnwrap(fixture.jsonLines("requests.jsonl").first)
        XCTAssertEqual(request["content_encoding"] as? String, "gzip")
        XCTAssertEqual(request["content_type"] as? String, "application/x-protobuf")
        XCTAssertEqual((request["headers"] as? [String: Any])?["x-api-key"] as? String, "sentinel-header-value")
        XCTAssertTrue(eventually { exporter.snapshot.exported == 2 })
        exporter.stop()
    }

    func testUncompressedBodiesWhenGzipIsOff() throws {
        let fixture = try receiver()
        let exporter = try exporter(port: fixture.port, gzip: false)
        exporter.start()
        var ids = IDGenerator()
        exporter.submit(SpanRecord(context: SpanContext(traceID: ids.traceID(), spanID: ids.spanID(), sampled: true), parentSpanID: nil,
                                   name: "GET", kind: .server, startNanos: 1, endNanos: 2))
        XCTAssertEqual(spans(fixture, count: 1).count, 1)
        XCTAssertTrue(eventually { !fixture.jsonLines("requests.jsonl").isEmpty })
        XCTAssertNil(fixture.jsonLines("requests.jsonl").first?["content_encoding"] as? String)
        exporter.stop()
    }

    func testA503IsRetriedAfterItsRetryAfterAndTheSpansArriveOnce() throws {
        let fixture = try receiver(["--fail-first", "2"])
        let exporter = try exporter(port: fixture.port)
        exporter.start()
        let started = ContinuousClock.now
        submitSpans(3, to: exporter)
        XCTAssertEqual(spans(fixture, count: 3).count, 3)
        XCTAssertGreaterThanOrEqual(ContinuousClock.now - started, .seconds(2), "two Retry-After: 1 waits")
        XCTAssertTrue(eventually { exporter.snapshot.exported == 3 })
        let counts = exporter.snapshot
        XCTAssertEqual(counts.exportsFailed, 2)
        XCTAssertEqual(counts.exportsAccepted, 1)
        XCTAssertEqual(counts.dropped, 0)
        Thread.sleep(forTimeInterval: 0.3)
        XCTAssertEqual(fixture.jsonLines("spans.jsonl").count, 3, "no span sent twice")
        exporter.stop()
    }

    func testAFullQueueDropsAndCountsWithoutBlocking() throws {
        // A batch larger than the queue: no full batch ever wakes the loop, so nothing leaves the
        // queue (with batch 4, the first four were sent off, unstarted or not, and under
        // ThreadSanitizer the loop sometimes took them before the last six were submitted).
        let exporter = try exporter(port: 9, queue: 4, batch: 8)
        submitSpans(10, to: exporter)
        XCTAssertEqual(exporter.snapshot.queued, 4)
        XCTAssertEqual(exporter.snapshot.droppedQueueFull, 6)
    }

    func testAFullBatchIsSentBeforeTheDelay() throws {
        let fixture = try receiver()
        let exporter = try exporter(port: fixture.port, batch: 5, delay: .seconds(60))
        exporter.start()
        submitSpans(5, to: exporter)
        XCTAssertEqual(spans(fixture, count: 5).count, 5)
        exporter.stop()
    }

    func testShutdownSendsWhatIsQueuedWithoutWaitingForTheDelay() throws {
        let fixture = try receiver()
        let exporter = try exporter(port: fixture.port, batch: 4, delay: .seconds(60))
        exporter.start()
        submitSpans(3, to: exporter)
        let started = ContinuousClock.now
        exporter.shutdown(timeout: .seconds(5))
        XCTAssertLessThan(ContinuousClock.now - started, .seconds(5))
        XCTAssertEqual(fixture.jsonLines("spans.jsonl").count, 3, "sent before shutdown returned")
        XCTAssertEqual(exporter.snapshot.exported, 3)
    }

    func testShutdownWithTheReceiverDownGivesUpWithinItsTimeoutAndCounts() throws {
        let exporter = try exporter(port: 9, delay: .seconds(60))
        exporter.start()
        submitSpans(3, to: exporter)
        let started = ContinuousClock.now
        exporter.shutdown(timeout: .seconds(3))
        XCTAssertLessThan(ContinuousClock.now - started, .seconds(4))
        XCTAssertTrue(eventually { exporter.snapshot.droppedExportFailed == 3 }, "\(exporter.snapshot)")
    }

    /// A receiver that reads the export and closes without an answer: a failure, retried; the
    /// spans arrive once when it answers again, none lost, none twice.
    func testAReceiverThatClosesMidExchangeIsRetriedAndNothingIsSentTwice() throws {
        let fixture = try receiver()
        try fixture.writeJSON(["mode": "close"], to: "control.json")
        let exporter = try exporter(port: fixture.port)
        exporter.start()
        submitSpans(4, to: exporter)
        XCTAssertTrue(eventually { exporter.snapshot.exportsFailed >= 1 })
        try fixture.writeJSON(["mode": "ok"], to: "control.json")
        XCTAssertEqual(spans(fixture, count: 4).count, 4)
        XCTAssertTrue(eventually { exporter.snapshot.exported == 4 })
        Thread.sleep(forTimeInterval: 0.3)
        XCTAssertEqual(fixture.jsonLines("spans.jsonl").count, 4, "no span sent twice")
        XCTAssertEqual(exporter.snapshot.dropped, 0)
        exporter.stop()
    }
}
