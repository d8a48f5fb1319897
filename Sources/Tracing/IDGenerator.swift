/// Random trace and span ids for one thread (a worker, the token loop): xoshiro256** seeded
/// once from the system's generator. A `getrandom` call per id would be a syscall per
/// traced request; W3C Trace Context asks for random ids, not cryptographic ones (§6.2).
public struct IDGenerator {
    private var state: (UInt64, UInt64, UInt64, UInt64)

    /// A generator seeded from the system's random source.
    public init() {
        var system = SystemRandomNumberGenerator()
        self.init(seed: (system.next(), system.next(), system.next(), system.next()))
    }

    /// A generator with a fixed seed (tests); an all-zero seed is replaced by a fixed one.
    public init(seed: (UInt64, UInt64, UInt64, UInt64)) {
        state = seed
        if state.0 | state.1 | state.2 | state.3 == 0 { state = (0x9E37_79B9_7F4A_7C15, 1, 2, 3) }
    }

    /// The next 64 random bits.
    @inline(__always)
    public mutating func next() -> UInt64 {
        let result = (state.1 &* 5).rotatedLeft(7) &* 9
        let shifted = state.1 << 17
        state.2 ^= state.0
        state.3 ^= state.1
        state.1 ^= state.2
        state.0 ^= state.3
        state.2 ^= shifted
        state.3 = state.3.rotatedLeft(45)
        return result
    }

    /// A new valid trace id.
    public mutating func traceID() -> TraceID {
        while true {
            let id = TraceID(high: next(), low: next())
            if id.isValid { return id }
        }
    }

    /// A new valid span id.
    public mutating func spanID() -> SpanID {
        while true {
            let value = next()
            if value != 0 { return SpanID(value) }
        }
    }
}

extension UInt64 {
    @inline(__always)
    fileprivate func rotatedLeft(_ count: UInt64) -> UInt64 { self << count | self >> (64 - count) }
}
