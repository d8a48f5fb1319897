/// The python of the OpenTelemetry test environment (`make otel-venv`: opentelemetry-proto and the
/// protobuf runtime from PyPI, in `.build-otel`), which the OTLP trace receiver
/// (Fixtures/otlp_receiver.py) and its self-test run with: `OTEL_PYTHON` when set, else that
/// environment's interpreter, else `python3` on the PATH (whose packages may lack them).
public enum OTelPython {
    /// The interpreter to run the trace receiver with.
    public static var path: String { VirtualEnvPython.path(folder: ".build-otel", variable: "OTEL_PYTHON") }
}
