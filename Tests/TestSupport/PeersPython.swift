import Foundation

/// The python of the test peers' virtual environment (`make peers-venv`: pyca/cryptography and
/// websockets from PyPI, in `.build-peers`): `PEERS_PYTHON` when set, else that environment's
/// interpreter, else `python3` on the PATH (whose packages may lack them).
public enum PeersPython {
    /// The interpreter to run a peer script with.
    public static var path: String {
        let repo = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let candidate = ProcessInfo.processInfo.environment["PEERS_PYTHON"] ?? repo.appendingPathComponent(".build-peers/bin/python3").path
        return FileManager.default.isExecutableFile(atPath: candidate) ? candidate : "python3"
    }
}
