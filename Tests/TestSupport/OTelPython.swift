import Foundation

/// The python of the OpenTelemetry test environment (`make otel-venv`: opentelemetry-proto and the
/// protobuf runtime from PyPI, in `.build-otel`), which the OTLP trace receiver
/// (Fixtures/otlp_receiver.py) and its self-test run with: `OTEL_PYTHON` when set, else that
/// environment's interpreter, else `python3` on the PATH (whose packages may lack them).
public enum OTelPython {
    /// The interpreter to run the trace receiver with.
    public static var path: String {
        let repo = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let candidate = ProcessInfo.processInfo.environment["OTEL_PYTHON"] ?? repo.appendingPathComponent(".build-otel/bin/python3").path
        return FileManager.default.isExecutableFile(atPath: candidate) ? candidate : "python3"
    }
}
