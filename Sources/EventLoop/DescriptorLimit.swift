import Glibc

/// The process's limit on open file descriptors (`RLIMIT_NOFILE`).
///
/// Every client connection, upstream connection and listener holds one descriptor, so this limit
/// bounds how many connections the proxy can hold at once.
public struct DescriptorLimit: Sendable, Equatable {
    /// The limit in force (the soft limit).
    public var current: Int
    /// The most the soft limit may be raised to without privileges (the hard limit).
    public var maximum: Int

    /// The limits as they are now.
    public static func read() -> DescriptorLimit {
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 else {
            // getrlimit cannot fail for a valid resource; 1024 is the usual default if it ever does.
            return DescriptorLimit(current: 1024, maximum: 1024)
        }
        return DescriptorLimit(current: clamp(limit.rlim_cur), maximum: clamp(limit.rlim_max))
    }

    /// Raises the soft limit to the hard limit and returns the limits now in force.
    ///
    /// Many environments start processes with a soft limit of 1024 and a much larger hard limit;
    /// a proxy needs the larger one. When the hard limit is unlimited the kernel still refuses
    /// more than `fs.nr_open`, so that case is left as it is rather than failing.
    @discardableResult
    public static func raiseToMaximum() -> DescriptorLimit {
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return read() }
        if limit.rlim_cur < limit.rlim_max && limit.rlim_max != unlimited {
            limit.rlim_cur = limit.rlim_max
            _ = setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
        }
        return read()
    }

    /// `RLIM_INFINITY` is `(rlim_t)-1`; Swift imports the macro as an overflowing literal.
    private static let unlimited = rlim_t.max

    private static func clamp(_ value: rlim_t) -> Int {
        value == unlimited || value > rlim_t(Int.max) ? Int.max : Int(value)
    }
}
