/// How trace export request bodies are compressed (`tracing.compression`,
/// `OTEL_EXPORTER_OTLP_COMPRESSION`).
public enum TraceCompression: String, Sendable, Hashable, CaseIterable {
    /// `Content-Encoding: gzip` (the default).
    case gzip
    /// Uncompressed protobuf.
    case none
}
