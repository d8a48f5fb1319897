@testable import Admin
import TestSupport
import XCTest

final class PrometheusRendererTests: XCTestCase {
    private func sample(_ families: [PrometheusTextParser.Family], _ name: String, _ labels: [String: String] = [:]) -> Double? {
        families.flatMap(\.samples).first { $0.name == name && $0.labels == labels }?.value
    }

    func testTheParserRejectsMalformedLines() {
        let bad = [
            "foo{a=\"b} 1\n", "foo 1 2 3\n", "foo\n", "1foo 1\n", "foo{a=b} 1\n", "foo{a=\"x\\q\"} 1\n",
            "foo one\n", "foo{a=\"1\",a=\"2\"} 1\n", "foo 1", "# TYPE foo bogus\n", "foo{le-x=\"1\"} 1\n",
            "# TYPE h histogram\nh_bucket 1\n",
        ]
        for text in bad {
            XCTAssertThrowsError(try PrometheusTextParser.parse(text), "should reject \(text.debugDescription)")
        }
        XCTAssertNoThrow(try PrometheusTextParser.parse("# a comment\nfoo{a=\"b\",} 1 1700000000000\n"))
    }

    func testCountersGaugesEscapingAndSpecialValues() throws {
        let families: [MetricFamily] = [
            .counter("sidecar_requests_total", help: "Requests by outcome.\nSecond \\ line", [
                MetricSample(labels: [MetricLabel("route", "a.example.com"), MetricLabel("code", "200")], value: 42),
                MetricSample(labels: [MetricLabel("route", "quote\" back\\slash\nnewline"), MetricLabel("code", "502")], value: 1),
            ]),
            .gauge("sidecar_odd_values", help: "Special values.", [
                MetricSample(labels: [MetricLabel("v", "pinf")], value: .infinity),
                MetricSample(labels: [MetricLabel("v", "ninf")], value: -.infinity),
                MetricSample(labels: [MetricLabel("v", "nan")], value: .nan),
                MetricSample(labels: [MetricLabel("v", "small")], value: 0.000012),
                MetricSample(labels: [MetricLabel("v", "neg")], value: -2.5),
                MetricSample(labels: [MetricLabel("v", "big")], value: 1e300),
            ]),
            .gauge("sidecar_up", help: "", [MetricSample(value: 1)]),
        ]
        let text = PrometheusRenderer.render(families)
        XCTAssertTrue(text.contains("sidecar_requests_total{route=\"a.example.com\",code=\"200\"} 42\n"), text)
        XCTAssertTrue(text.contains("sidecar_up 1\n"))
        let parsed = try PrometheusTextParser.parse(text)
        XCTAssertEqual(parsed.map(\.name), ["sidecar_requests_total", "sidecar_odd_values", "sidecar_up"])
        XCTAssertEqual(parsed[0].help, "Requests by outcome.\nSecond \\ line")
        XCTAssertEqual(parsed[0].type, "counter")
        XCTAssertEqual(parsed[1].type, "gauge")
        XCTAssertEqual(sample(parsed, "sidecar_requests_total", ["route": "quote\" back\\slash\nnewline", "code": "502"]), 1)
        XCTAssertEqual(sample(parsed, "sidecar_odd_values", ["v": "pinf"]), .infinity)
        XCTAssertEqual(sample(parsed, "sidecar_odd_values", ["v": "ninf"]), -.infinity)
        XCTAssertEqual(sample(parsed, "sidecar_odd_values", ["v": "nan"])?.isNaN, true)
        XCTAssertEqual(sample(parsed, "sidecar_odd_values", ["v": "small"]), 0.000012)
        XCTAssertEqual(sample(parsed, "sidecar_odd_values", ["v": "neg"]), -2.5)
        XCTAssertEqual(sample(parsed, "sidecar_odd_values", ["v": "big"]), 1e300)
    }

    func testHistogramRendering() throws {
        var histogram = Histogram()
        for value in [0.0003, 0.0005, 0.004, 0.2, 0.2, 3, 50] { histogram.observe(value) }
        let families: [MetricFamily] = [
            .histogram("sidecar_request_duration_seconds", help: "Latency.", [
                HistogramSample(labels: [MetricLabel("worker", "0")], histogram: histogram),
                HistogramSample(labels: [MetricLabel("worker", "1")], histogram: Histogram()),
            ]),
        ]
        let text = PrometheusRenderer.render(families)
        XCTAssertTrue(text.contains("sidecar_request_duration_seconds_bucket{worker=\"0\",le=\"0.0005\"} 2\n"), text)
        XCTAssertTrue(text.contains("sidecar_request_duration_seconds_bucket{worker=\"0\",le=\"1\"} 5\n"), text)
        XCTAssertTrue(text.contains("sidecar_request_duration_seconds_bucket{worker=\"0\",le=\"+Inf\"} 7\n"), text)
        let parsed = try PrometheusTextParser.parse(text)
        XCTAssertEqual(parsed.count, 1)
        XCTAssertEqual(parsed[0].type, "histogram")
        for worker in ["0", "1"] {
            let buckets = parsed[0].samples.filter { $0.name.hasSuffix("_bucket") && $0.labels["worker"] == worker }
            XCTAssertEqual(buckets.count, Histogram.defaultLatencyBounds.count + 1)
            let bounds = buckets.map { PrometheusTextParser.parseValue($0.labels["le"]!)! }
            XCTAssertEqual(bounds, Histogram.defaultLatencyBounds + [.infinity], "bounds in order, ending with +Inf")
            let counts = buckets.map(\.value)
            XCTAssertEqual(counts, counts.sorted(), "cumulative counts never decrease")
            XCTAssertEqual(counts.last, sample(parsed, "sidecar_request_duration_seconds_count", ["worker": worker]))
        }
        XCTAssertEqual(sample(parsed, "sidecar_request_duration_seconds_sum", ["worker": "0"])!,
                       0.0003 + 0.0005 + 0.004 + 0.2 + 0.2 + 3 + 50, accuracy: 1e-9)
        XCTAssertEqual(sample(parsed, "sidecar_request_duration_seconds_count", ["worker": "1"]), 0)
    }

    func testInvalidNamesAreSanitisedNotFatal() throws {
        let text = PrometheusRenderer.render([
            .gauge("9bad-name.x", help: "h", [MetricSample(labels: [MetricLabel("a-b:c", "v"), MetricLabel("", "e")], value: 1)]),
        ])
        let parsed = try PrometheusTextParser.parse(text)
        XCTAssertEqual(parsed.first?.name, "_bad_name_x")
        XCTAssertEqual(parsed.first?.samples.first?.labels, ["a_b_c": "v", "_": "e"])
    }

    func testNumberFormatting() {
        XCTAssertEqual(PrometheusRenderer.format(3), "3")
        XCTAssertEqual(PrometheusRenderer.format(-0.0), "0")
        XCTAssertEqual(PrometheusRenderer.format(2.5), "2.5")
        XCTAssertEqual(PrometheusRenderer.format(0.0005), "0.0005")
        XCTAssertEqual(PrometheusRenderer.format(.nan), "NaN")
        XCTAssertEqual(PrometheusRenderer.format(.infinity), "+Inf")
        XCTAssertEqual(PrometheusRenderer.format(-.infinity), "-Inf")
        XCTAssertEqual(Double(PrometheusRenderer.format(1e20)), 1e20)
        XCTAssertEqual(Double(PrometheusRenderer.format(1.0e-7)), 1.0e-7)
    }

    func testEmptyRendersEmpty() throws {
        XCTAssertEqual(PrometheusRenderer.render([]), "")
        XCTAssertEqual(try PrometheusTextParser.parse("").count, 0)
    }
}
