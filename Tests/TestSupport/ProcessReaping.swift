import Foundation
import Glibc

/// Kills `process` (SIGKILL) and reaps it with `waitpid`, without Foundation's
/// `waitUntilExit`: when many children end at once (a fleet of sidecars torn down under ASan),
/// Foundation's SIGCHLD watch was seen to miss an exit — the child stayed a zombie and
/// `waitUntilExit` waited forever, hanging the suite. After this call `process.isRunning` may
/// still say true; the process is gone all the same.
public func killAndReap(_ process: Process) {
    guard process.isRunning else { return }
    let pid = process.processIdentifier
    kill(pid, SIGKILL)
    var status: Int32 = 0
    // SIGKILL cannot be ignored: this returns once the child is dead (or at once with ECHILD
    // when Foundation reaped it first).
    while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
}
