import HTTP1Fuzzing

/// libFuzzer's entry point: runs `ResponseHeadCheck` and traps on any violated property, so the
/// input is saved as a crash.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzResponseHead(_ start: UnsafeRawPointer, _ count: Int) -> CInt {
    let problems = ResponseHeadCheck.run(FuzzInput(Array(UnsafeRawBufferPointer(start: start, count: count))))
    if let first = problems.first { fatalError(first) }
    return 0
}
