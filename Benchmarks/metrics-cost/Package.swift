// swift-tools-version:6.0
import PackageDescription

// What per-request metrics cost on the proxy's hot path: the project's worker-local counters
// against swift-metrics with the swift-prometheus backend. A separate package so the product
// does not depend on what it measures. Run: make bench-metrics (or swift run -c release).
let package = Package(
    name: "metrics-cost",
    dependencies: [
        .package(url: "https://github.com/apple/swift-metrics", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus", from: "2.4.1"),
    ],
    targets: [
        .executableTarget(
            name: "MetricsCost",
            dependencies: [
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
            ],
            swiftSettings: [.swiftLanguageMode(.v6)]
        ),
    ]
)
