import Foundation

/// A directory laid out like a Kubernetes secret or projected volume: each file name is a
/// symlink into `..data`, itself a symlink to a timestamped directory. ``publish(_:)`` swaps
/// the whole set atomically the way the kubelet does (new directory, new `..data` symlink
/// renamed over the old one).
public final class ProjectedVolume {
    /// The volume's directory (removed with the volume).
    public let directory: URL
    private var generation = 0

    /// An empty volume in a new temporary directory.
    public init() throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("projected-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    }

    deinit { try? FileManager.default.removeItem(at: directory) }

    /// The path a config names: `<dir>/<name>` (a symlink through `..data`).
    public func path(_ name: String) -> String { directory.appendingPathComponent(name).path }

    /// Publishes a new generation of files (name → contents) with one atomic `..data` swap.
    public func publish(_ files: [String: [UInt8]]) throws {
        generation += 1
        let versioned = "..2026_11_23_\(generation)"
        let target = directory.appendingPathComponent(versioned)
        try FileManager.default.createDirectory(at: target, withIntermediateDirectories: true)
        for (name, contents) in files {
            try Data(contents).write(to: target.appendingPathComponent(name))
        }
        let temporary = directory.appendingPathComponent("..data_tmp").path
        unlink(temporary)
        guard symlink(versioned, temporary) == 0,
              rename(temporary, directory.appendingPathComponent("..data").path) == 0 else {
            throw TestClientError.malformed("cannot swap ..data")
        }
        for name in files.keys where (try? FileManager.default.destinationOfSymbolicLink(atPath: path(name))) == nil {
            guard symlink("..data/\(name)", path(name)) == 0 else { throw TestClientError.malformed("cannot link \(name)") }
        }
    }

    /// Publishes files given as text.
    public func publish(text files: [String: String]) throws {
        try publish(files.mapValues { Array($0.utf8) })
    }
}
