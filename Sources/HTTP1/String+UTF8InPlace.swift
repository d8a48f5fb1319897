extension String {
    /// Calls `body` with the string's UTF-8 bytes, read in place (a native or small String, as
    /// nearly all are), or from a copy made contiguous (a bridged one). Unlike `withUTF8`, which
    /// needs a `var`: a copy of a String to call it on is a retain and a release.
    @inline(__always)
    public func withUTF8InPlace<R>(_ body: (UnsafeBufferPointer<UInt8>) -> R) -> R {
        if let result = utf8.withContiguousStorageIfAvailable(body) { return result }
        var copy = self
        return copy.withUTF8(body)
    }
}
