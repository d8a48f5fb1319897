import Foundation

/// The grpc-go test peer (`Tests/ProxyTests/Fixtures/grpc_go_peer/main.go`, built by `make
/// grpc-go-peer` into `.build-grpcgo` against Debian's golang-google-grpc-dev, offline):
/// `GRPC_GO_PEER` when set, else that build.
public enum GRPCGoPeer {
    /// The peer's executable.
    public static var path: String {
        let repo = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        return ProcessInfo.processInfo.environment["GRPC_GO_PEER"] ?? repo.appendingPathComponent(".build-grpcgo/grpc_go_peer").path
    }

    /// Why the peer cannot run, or nil when it is built.
    public static var missing: String? {
        FileManager.default.isExecutableFile(atPath: path) ? nil : "no grpc-go peer at \(path): run `make grpc-go-peer` (needs golang-go and golang-google-grpc-dev)"
    }
}
