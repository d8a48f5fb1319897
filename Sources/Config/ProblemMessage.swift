/// An internal failure carrying only a human-readable message, used where a
/// helper fails and the caller decides which file and key path to report.
struct ProblemMessage: Error, Sendable {
    let message: String

    init(_ message: String) {
        self.message = message
    }
}
