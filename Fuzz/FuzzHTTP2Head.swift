import HTTP2Fuzzing

/// libFuzzer's entry point: runs `HTTP2HeadCheck` (the HTTP/2 head validator against its
/// oracle, the old translation read back by the HTTP/1.1 rules) and traps on any difference.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzHTTP2Head(_ start: UnsafeRawPointer, _ count: Int) -> CInt {
    let problems = HTTP2HeadCheck.run(Array(UnsafeRawBufferPointer(start: start, count: count)))
    if let first = problems.first { fatalError(first) }
    return 0
}
