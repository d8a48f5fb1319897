/// A type-erased random number generator, so a seeded one can be injected in tests.
public struct AnyRandomNumberGenerator: RandomNumberGenerator {
    private var base: any RandomNumberGenerator

    /// Wraps `base`.
    public init(_ base: any RandomNumberGenerator) {
        self.base = base
    }

    /// The next 64 random bits from the wrapped generator.
    public mutating func next() -> UInt64 {
        base.next()
    }
}
