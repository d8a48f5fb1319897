import Foundation
import TestSupport

extension FixtureProcess {
    /// Runs `python3 ProxyTests/Fixtures/<script> <arguments>` (see ``FixtureProcess``).
    convenience init(script: String, arguments: [String] = []) throws {
        try self.init(script: Backend.fixtures.appendingPathComponent(script), arguments: arguments)
    }
}
