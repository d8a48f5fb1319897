import Foundation
import TestSupport

/// Runs curl (a real HTTP client) and returns its exit status, stdout and stderr.
enum Curl {
    static func run(_ arguments: [String], stdin: Data? = nil) throws -> (status: Int32, out: String, err: String) {
        // Never let the environment's proxy settings (Command passes PATH and HOME only) or a ~/.curlrc (-q) into a test.
        let outcome = try Command.run(["curl", "-q", "-sS", "--max-time", "20"] + arguments, stdin: stdin, timeout: nil)
        return (outcome.status, outcome.out, outcome.err)
    }
}
