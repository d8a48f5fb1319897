/// The python of the test peers' virtual environment (`make peers-venv`: pyca/cryptography and
/// websockets from PyPI, in `.build-peers`): `PEERS_PYTHON` when set, else that environment's
/// interpreter, else `python3` on the PATH (whose packages may lack them).
public enum PeersPython {
    /// The interpreter to run a peer script with.
    public static var path: String { VirtualEnvPython.path(folder: ".build-peers", variable: "PEERS_PYTHON") }
}
