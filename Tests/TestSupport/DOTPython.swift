/// The python of the OAuth-server test environment (`make dot-venv`: Django and
/// django-oauth-toolkit from PyPI, in `.build-dot`), which runs the refresh-token tests' real
/// authorization server: `DOT_PYTHON` when set, else that environment's interpreter, else `python3`.
public enum DOTPython {
    /// The interpreter to run the server with.
    public static var path: String { VirtualEnvPython.path(folder: ".build-dot", variable: "DOT_PYTHON") }
}
