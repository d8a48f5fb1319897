import HTTP2Fuzzing

/// libFuzzer's entry point: runs `HTTP2RequestCheck` and traps on any violated property, so the
/// input is saved as a crash.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzHTTP2(_ start: UnsafeRawPointer, _ count: Int) -> CInt {
    let problems = HTTP2RequestCheck.run(Array(UnsafeRawBufferPointer(start: start, count: count)))
    if let first = problems.first { fatalError(first) }
    return 0
}
