// swift-tools-version:6.0
import PackageDescription

// Release builds drop the dynamic exclusivity checks (`swift_beginAccess` on every class
// property access cost ~4k instructions per proxied request, 7% of the total); debug builds and
// the test suites, plain and under TSan, keep them and would catch a violation.
// Cross-module optimization lets the optimizer inline EventLoop and HTTP1 calls into Proxy
// (generic and small functions across the module boundary): 35.4k -> 34.3k instructions/request.
let strict: [SwiftSetting] = [
    .swiftLanguageMode(.v6),
    .unsafeFlags(["-enforce-exclusivity=unchecked", "-cross-module-optimization"], .when(configuration: .release)),
]

let package = Package(
    name: "token-sidecar",
    platforms: [.macOS(.v13)],
    products: [
        .executable(name: "token-sidecar", targets: ["token-sidecar"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/jpsim/Yams", from: "6.2.2"),
    ],
    targets: [
        // libevent (core, extra, pthreads, openssl), plus a C shim for macros.
        .systemLibrary(
            name: "CLibevent",
            pkgConfig: "libevent",
            providers: [.apt(["libevent-dev"])]
        ),
        // OpenSSL (libssl, libcrypto), plus a C shim for macros.
        .systemLibrary(
            name: "COpenSSL",
            pkgConfig: "openssl",
            providers: [.apt(["libssl-dev"])]
        ),
        // OpenSSL outside the transports: signing keys and JWS, AES-GCM, digests, X.509 parsing
        // and minting (the interception CA). Usable without an event loop.
        .target(name: "Crypto", dependencies: ["COpenSSL"], swiftSettings: strict),
        // AWS Signature Version 4: canonical requests, string to sign, signing keys.
        .target(name: "AWSSigning", dependencies: ["Crypto", "HTTP1"], swiftSettings: strict),
        // zlib, for gzip-compressed trace exports.
        .systemLibrary(name: "CZlib", pkgConfig: "zlib", providers: [.apt(["zlib1g-dev"])]),
        // Spans, W3C Trace Context, samplers and the OTLP protobuf encoding: no I/O, no
        // dependencies, so the proxy and the token manager record spans without a runtime.
        .target(name: "Tracing", swiftSettings: strict),
        // The OTLP/HTTP batch exporter, on a loop of its own, over the token manager's HTTP client.
        .target(name: "TraceExport", dependencies: ["Tracing", "TokenManager", "EventLoop", "HTTP1", "CZlib",
                                                   .product(name: "Logging", package: "swift-log")], swiftSettings: strict),
        .target(name: "EventLoop", dependencies: ["CLibevent", "COpenSSL", "Crypto"], swiftSettings: strict),
        .target(name: "HTTP1", swiftSettings: strict),
        // nghttp2 (Debian's libnghttp2-dev), imported only by HTTP2.
        .systemLibrary(name: "CNghttp2", pkgConfig: "libnghttp2", providers: [.apt(["libnghttp2-dev"])]),
        // HTTP/2 framing with no I/O: nghttp2 wrapped as a codec (bytes in, per-stream events out, and back).
        .target(name: "HTTP2", dependencies: ["CNghttp2", "HTTP1"], swiftSettings: strict),
        // HTTP/1 messages over streams, above the codec: the one head-reading loop and the one
        // body reader, used by the proxy, the admin server and the token client.
        // Also the complete requests and responses a local responder (admin, demo) sees and makes.
        .target(name: "HTTPMessage", dependencies: ["EventLoop", "HTTP1", "JSON"], swiftSettings: strict),
        // A small RESP2 client for the shared token cache, on the project's own transport (TLS included).
        .target(name: "Redis", dependencies: ["EventLoop"], swiftSettings: strict),
        // JSON documents and string escaping, for admin answers, error bodies and log lines.
        .target(name: "JSON", swiftSettings: strict),
        .target(
            name: "Config",
            dependencies: [.product(name: "Yams", package: "Yams")],
            swiftSettings: strict
        ),
        .target(
            name: "TokenManager",
            dependencies: ["HTTP1", "HTTPMessage", "EventLoop", "Crypto", "JSON", "Tracing", "AWSSigning", .product(name: "Logging", package: "swift-log")],
            swiftSettings: strict
        ),
        // The admin endpoints, answered by the proxy's own client session (a local responder
        // instead of an upstream: `LocalServer`).
        .target(name: "Admin", dependencies: ["EventLoop", "HTTP1", "HTTPMessage", "JSON", "Proxy"], swiftSettings: strict),
        // The demo OAuth issuer and protected backend (`token-sidecar demo` and tests), served
        // like the admin endpoints; nothing here runs in a production sidecar.
        .target(name: "Demo", dependencies: ["Admin", "CredentialEndpoints", "EventLoop", "HTTPMessage", "JSON", "Proxy"], swiftSettings: strict),
        // The credential endpoints apps' SDKs call (`credentialEndpoints:`): MCA and RFC 6749 token
        // endpoints, the GCE metadata server, Azure managed identity, AWS container credentials.
        .target(name: "CredentialEndpoints", dependencies: ["Admin", "Config", "EventLoop", "HTTPMessage", "JSON", "Proxy", "TokenManager",
                                                           .product(name: "Logging", package: "swift-log")], swiftSettings: strict),
        // Builds credentials from configuration (secrets, keys, certificates, client TLS) and
        // runs their token loop; `run`, `check` and `token` use it, the proxy only looks tokens up.
        .target(
            name: "Credentials",
            dependencies: ["Config", "TokenManager", "EventLoop", "Crypto", "HTTP1", "Redis", "Tracing", .product(name: "Logging", package: "swift-log")],
            swiftSettings: strict
        ),
        .target(
            name: "Proxy",
            dependencies: [
                "EventLoop", "Crypto", "HTTP1", "HTTP2", "HTTPMessage", "TokenManager", "Config", "JSON", "Tracing", "AWSSigning",
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strict
        ),
        .executableTarget(
            name: "token-sidecar",
            dependencies: [
                "Proxy", "Credentials", "Config", "TokenManager", "EventLoop", "Crypto", "Admin", "Demo", "JSON", "Redis", "CredentialEndpoints",
                "Tracing", "TraceExport",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strict
        ),
        // Helpers shared by test targets (loopback clients, loop helpers, a throwaway CA); linked only into tests.
        .target(name: "TestSupport", dependencies: ["EventLoop", "Crypto"], path: "Tests/TestSupport", swiftSettings: strict),
        // The properties the fuzzers in Fuzz/ check, also run over their corpus by HTTP1Tests.
        .target(name: "HTTP1Fuzzing", dependencies: ["HTTP1"], path: "Tests/HTTP1Fuzzing", swiftSettings: strict),
        .testTarget(name: "HTTP1Tests", dependencies: ["HTTP1", "HTTP1Fuzzing", "TestSupport"], swiftSettings: strict),
        // The properties the HTTP/2 fuzzer (Fuzz/FuzzHTTP2.swift) checks, also run over its corpus by HTTP2Tests.
        .target(name: "HTTP2Fuzzing", dependencies: ["HTTP2", "HTTP1"], path: "Tests/HTTP2Fuzzing", swiftSettings: strict),
        .testTarget(name: "HTTP2Tests", dependencies: ["HTTP2", "HTTP1", "HTTP2Fuzzing"], swiftSettings: strict),
        .testTarget(name: "JSONTests", dependencies: ["JSON"], swiftSettings: strict),
        .testTarget(name: "TracingTests", dependencies: ["Tracing", "TraceExport", "TokenManager", "EventLoop", "TestSupport"],
                    swiftSettings: strict),
        .testTarget(name: "HTTPMessageTests", dependencies: ["HTTPMessage", "HTTP1", "EventLoop", "TestSupport"], swiftSettings: strict),
        .testTarget(name: "AdminTests", dependencies: ["Admin", "Proxy", "EventLoop", "HTTP1", "HTTPMessage", "JSON", "TestSupport"], swiftSettings: strict),
        .testTarget(name: "CredentialEndpointsTests", dependencies: ["CredentialEndpoints", "Config", "HTTPMessage", "HTTP1", "JSON"],
                    swiftSettings: strict),
        .testTarget(name: "DemoTests", dependencies: ["Demo", "Admin", "EventLoop", "HTTPMessage", "TestSupport"], swiftSettings: strict),
        .testTarget(name: "EventLoopTests", dependencies: ["EventLoop", "Crypto", "TestSupport"], exclude: ["Fixtures"],
                    swiftSettings: strict),
        .testTarget(name: "CryptoTests", dependencies: ["Crypto", "TestSupport"], exclude: ["Fixtures"], swiftSettings: strict),
        .testTarget(name: "AWSSigningTests", dependencies: ["AWSSigning"], exclude: ["Fixtures"], swiftSettings: strict),
        // The RESP client, and the shared token cache's Redis store, against a real redis-server.
        .testTarget(name: "RedisTests", dependencies: ["Redis", "EventLoop", "Crypto", "Credentials", "TokenManager", "TestSupport"],
                    swiftSettings: strict),
        .testTarget(name: "ConfigTests", dependencies: ["Config"], swiftSettings: strict),
        .testTarget(
            name: "TokenManagerTests",
            dependencies: ["TokenManager", "EventLoop", "Crypto", "HTTP1", "TestSupport"],
            exclude: ["Fixtures"],
            swiftSettings: strict
        ),
        .testTarget(
            name: "ProxyTests",
            dependencies: ["Proxy", "Credentials", "Config", "TokenManager", "EventLoop", "Crypto", "HTTP1", "HTTP2", "HTTPMessage", "TestSupport", "Tracing"],
            exclude: ["Fixtures"],
            swiftSettings: strict
        ),
        // Runs the built `token-sidecar` binary as a process (CLI behaviour, exit codes, signals).
        .testTarget(name: "TokenSidecarTests", dependencies: ["TestSupport", "Crypto"], exclude: ["Fixtures"], swiftSettings: strict),
    ]
)
