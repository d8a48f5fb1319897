extension Array where Element: AnyObject {
    /// Calls `body` with each element in order, without the retain and release Swift puts around
    /// each call when it cannot see what `body` does (two atomic operations an element: a loop's
    /// lists of connections and streams are walked many times per request, and under load these
    /// cost more than their instructions suggest). The array keeps every element alive for the
    /// walk, so it must not change while `body` runs: walk a local copy no one else can reach.
    @inlinable
    public func forEachUnretained(_ body: (Element) -> Void) {
        withUnsafeBufferPointer { elements in
            for index in elements.indices {
                Unmanaged.passUnretained(elements[index])._withUnsafeGuaranteedRef(body)
            }
        }
    }
}
