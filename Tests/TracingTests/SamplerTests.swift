import XCTest
@testable import Tracing

final class SamplerTests: XCTestCase {
    func testParentBasedFollowsTheParentsFlag() {
        let sampler = Sampler.parentBased(root: .alwaysOff)
        var ids = IDGenerator(seed: (1, 2, 3, 4))
        let trace = ids.traceID()
        let sampledParent = SpanContext(traceID: trace, spanID: ids.spanID(), sampled: true, isRemote: true)
        var unsampledParent = sampledParent
        unsampledParent.sampled = false
        XCTAssertTrue(sampler.shouldSample(traceID: trace, parent: sampledParent))
        XCTAssertFalse(sampler.shouldSample(traceID: trace, parent: unsampledParent))
        XCTAssertFalse(sampler.shouldSample(traceID: trace, parent: nil))
        XCTAssertFalse(Sampler.parentBased(root: .alwaysOn).shouldSample(traceID: trace, parent: unsampledParent))
        XCTAssertTrue(Sampler.parentBased(root: .alwaysOn).shouldSample(traceID: trace, parent: nil))
    }

    func testTheRatioKeepsAboutItsShareOfTraces() {
        var ids = IDGenerator(seed: (5, 6, 7, 8))
        for ratio in [0.01, 0.1, 0.5] {
            let sampled = (0..<100_000).filter { _ in Sampler.traceIDRatio(ratio).shouldSample(traceID: ids.traceID(), parent: nil) }.count
            XCTAssertEqual(Double(sampled) / 100_000, ratio, accuracy: ratio * 0.1, "ratio \(ratio)")
        }
        XCTAssertTrue(Sampler.traceIDRatio(1).shouldSample(traceID: TraceID(high: 1, low: .max), parent: nil))
        XCTAssertFalse(Sampler.traceIDRatio(0).shouldSample(traceID: TraceID(high: 1, low: 0), parent: nil))
    }

    func testTheDecisionDependsOnTheTraceIdAloneSoEveryHopAgrees() {
        let trace = TraceID(high: 7, low: 0x0100_0000_0000_0000)
        let first = Sampler.traceIDRatio(0.05).shouldSample(traceID: trace, parent: nil)
        for _ in 0..<10 { XCTAssertEqual(Sampler.traceIDRatio(0.05).shouldSample(traceID: trace, parent: nil), first) }
    }

    func testOpenTelemetryNames() {
        XCTAssertEqual(Sampler.named("always_on", argument: 0), .alwaysOn)
        XCTAssertEqual(Sampler.named("always_off", argument: 0), .alwaysOff)
        XCTAssertEqual(Sampler.named("traceidratio", argument: 0.25), .traceIDRatio(0.25))
        XCTAssertEqual(Sampler.named("parentbased_always_on", argument: 0), .parentBased(root: .alwaysOn))
        XCTAssertEqual(Sampler.named("parentbased_always_off", argument: 0), .parentBased(root: .alwaysOff))
        XCTAssertEqual(Sampler.named("parentbased_traceidratio", argument: 0.01), .parentBased(root: .traceIDRatio(0.01)))
        XCTAssertNil(Sampler.named("jaeger_remote", argument: 0))
    }

    /// The tracer flattens its sampler for speed: it must decide exactly as the sampler does.
    func testTheTracersDecisionIsTheSamplers() {
        struct Discard: SpanSink { func submit(_ span: SpanRecord) {} }
        let samplers: [Sampler] = [.alwaysOn, .alwaysOff, .traceIDRatio(0), .traceIDRatio(0.3), .traceIDRatio(1),
                                   .parentBased(root: .alwaysOn), .parentBased(root: .alwaysOff),
                                   .parentBased(root: .traceIDRatio(0.3))]
        var ids = IDGenerator(seed: (9, 10, 11, 12))
        for sampler in samplers {
            let tracer = Tracer(sampler: sampler, sink: Discard())
            for index in 0..<2_000 {
                let parent: SpanContext? = index % 3 == 0 ? nil
                    : SpanContext(traceID: ids.traceID(), spanID: ids.spanID(), sampled: index % 3 == 1, isRemote: true)
                var copy = ids
                let span = tracer.newSpan(parent: parent, ids: &copy)
                XCTAssertEqual(span.sampled, sampler.shouldSample(traceID: span.traceID, parent: parent), "\(sampler) \(index)")
                if let parent { XCTAssertEqual(span.traceID, parent.traceID) }
                ids = copy
            }
        }
    }
}
