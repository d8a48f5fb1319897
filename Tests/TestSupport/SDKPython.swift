/// The python of the vendor-SDK test environment (`make sdk-venv`: the `openai` and `anthropic`
/// SDKs from PyPI, in `.build-sdk`), which the placement and placeholder tests run the SDKs
/// with, unchanged: `SDK_PYTHON` when set, else that environment's interpreter, else `python3`.
public enum SDKPython {
    /// The interpreter to run an SDK client with.
    public static var path: String { VirtualEnvPython.path(folder: ".build-sdk", variable: "SDK_PYTHON") }
}
