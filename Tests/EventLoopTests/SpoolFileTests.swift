import EventLoop
import Glibc
import XCTest

/// The spool file: bytes come back whole and in order however writes and reads interleave,
/// the file leaves no name behind, and failures are errors, not lost bytes.
final class SpoolFileTests: XCTestCase {
    private var directory = ""

    override func setUpWithError() throws {
        var template = Array("/tmp/spool-test.XXXXXX".utf8CString)
        let made = template.withUnsafeMutableBufferPointer { mkdtemp($0.baseAddress!) }
        directory = String(cString: try XCTUnwrap(made))
    }

    override func tearDown() {
        _ = rmdir(directory)
    }

    private static func payload(_ count: Int, seed: Int) -> [UInt8] {
        (0..<count).map { UInt8(truncatingIfNeeded: ($0 &+ seed) &* 131 &+ ($0 >> 11)) }
    }

    /// 3 MiB written in uneven pieces (many evbuffer chains each) while reads of other uneven
    /// sizes interleave: every byte comes back once, in order.
    func testInterleavedWritesAndReadsKeepEveryByteInOrder() throws {
        let spool = try SpoolFile(directory: directory)
        let source = OwnedEventBuffer()
        let destination = OwnedEventBuffer()
        var written: [UInt8] = []
        var writeSizes = [1, 7, 4096, 65_537, 300_000, 13]
        var readSizes = [3, 70_000, 1, 250_000, 9_999]
        var step = 0
        while written.count < 3 * 1024 * 1024 {
            // Several appends per write, so the source holds several chains.
            for _ in 0..<3 {
                let piece = Self.payload(writeSizes[step % writeSizes.count], seed: written.count)
                source.buffer.append(piece)
                written += piece
            }
            writeSizes.swapAt(0, step % writeSizes.count)
            try spool.append(from: source.buffer)
            XCTAssertTrue(source.buffer.isEmpty, "an append drains what it wrote")
            try spool.read(into: destination.buffer, max: readSizes[step % readSizes.count])
            readSizes.swapAt(0, step % readSizes.count)
            step += 1
        }
        while spool.pending > 0 { try spool.read(into: destination.buffer, max: 100_000) }
        XCTAssertEqual(spool.size, written.count)
        XCTAssertEqual(destination.buffer.count, written.count)
        XCTAssertTrue(destination.buffer.peekBytes(max: written.count) == written, "bytes come back whole and in order")
        XCTAssertEqual(try spool.read(into: destination.buffer, max: 10), 0, "nothing is read beyond what was written")
    }

    /// A fully read spool frees its blocks and starts again at offset 0; with a byte pending and
    /// less than a release step read, nothing is given back.
    func testAFullyReadFileIsEmptiedAndStartsAgain() throws {
        let spool = try SpoolFile(directory: directory)
        let source = OwnedEventBuffer()
        let destination = OwnedEventBuffer()
        source.buffer.append(Self.payload(10_000, seed: 1))
        try spool.append(from: source.buffer)
        try spool.read(into: destination.buffer, max: 9_999)
        XCTAssertEqual(spool.releaseRead(), 0, "a byte is still pending")
        XCTAssertEqual(spool.pending, 1)
        try spool.read(into: destination.buffer, max: 10)
        XCTAssertEqual(spool.releaseRead(), 10_000)
        XCTAssertEqual(spool.size, 0)
        let second = Self.payload(5_000, seed: 2)
        source.buffer.append(second)
        try spool.append(from: source.buffer)
        destination.buffer.drain(destination.buffer.count)
        try spool.read(into: destination.buffer, max: 5_000)
        XCTAssertTrue(destination.buffer.peekBytes(max: 5_000) == second, "after a reclaim the file starts again at 0")
    }

    /// An append bounded by `max` writes exactly that many bytes, even when the bound falls
    /// inside a chain, and leaves the rest in the source in order.
    func testABoundedAppendWritesExactlyThatMany() throws {
        let spool = try SpoolFile(directory: directory)
        let source = OwnedEventBuffer()
        let bytes = Self.payload(300_000, seed: 5)
        source.buffer.append(Array(bytes[0..<100_000]))
        source.buffer.append(Array(bytes[100_000...]))
        try spool.append(from: source.buffer, max: 150_001)
        XCTAssertEqual(spool.size, 150_001)
        XCTAssertEqual(source.buffer.count, 300_000 - 150_001)
        try spool.append(from: source.buffer)
        let destination = OwnedEventBuffer()
        try spool.read(into: destination.buffer, max: 300_000)
        XCTAssertTrue(destination.buffer.peekBytes(max: 300_000) == bytes)
    }

    /// A client that follows closely never empties the file: what it has read is given back in
    /// whole steps (the file holds only about what is unread), and reads stay exact after the
    /// holes.
    func testReadBytesAreGivenBackInWholeStepsWhileOthersArePending() throws {
        let spool = try SpoolFile(directory: directory)
        let source = OwnedEventBuffer()
        let destination = OwnedEventBuffer()
        let step = SpoolFile.releaseStep
        let bytes = Self.payload(3 * step + 1000, seed: 6)
        source.buffer.append(bytes)
        try spool.append(from: source.buffer)
        try spool.read(into: destination.buffer, max: step - 1)
        XCTAssertEqual(spool.releaseRead(), 0, "less than a step read")
        try spool.read(into: destination.buffer, max: 10)
        XCTAssertEqual(spool.releaseRead(), 2 * step - step, "one whole step read")
        XCTAssertEqual(spool.held, bytes.count - step)
        XCTAssertLessThanOrEqual(spool.diskUsage, spool.held + 64 * 1024, "the read step's blocks were freed")
        XCTAssertGreaterThanOrEqual(spool.diskUsage, 2 * step, "the unread part is still on disk")
        try spool.read(into: destination.buffer, max: bytes.count)
        XCTAssertTrue(destination.buffer.peekBytes(max: bytes.count) == bytes, "bytes after a hole read back exactly")
        XCTAssertEqual(spool.releaseRead(), bytes.count - step, "the rest once everything was read")
        XCTAssertEqual(spool.held, 0)
    }

    /// The file has no name: the directory stays empty while it is in use.
    func testTheFileIsUnlinkedAtOnce() throws {
        let spool = try SpoolFile(directory: directory)
        let source = OwnedEventBuffer()
        source.buffer.append(Self.payload(1000, seed: 3))
        try spool.append(from: source.buffer)
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: directory), [])
        withExtendedLifetime(spool) {}
    }

    /// A directory that does not exist is an error that names it.
    func testAMissingDirectoryIsAnErrorNamingIt() {
        XCTAssertThrowsError(try SpoolFile(directory: directory + "/missing")) { error in
            let text = String(describing: error)
            XCTAssertTrue(text.contains(directory + "/missing"), text)
            XCTAssertTrue(text.contains("No such file or directory"), text)
        }
    }

    /// A write the file system refuses (a full disk, simulated by a file size limit): the append
    /// fails with the error and the bytes not written stay in the source.
    func testAFailedWriteKeepsTheBytesAndReportsTheError() throws {
        let spool = try SpoolFile(directory: directory)
        let source = OwnedEventBuffer()
        source.buffer.append(Self.payload(200_000, seed: 4))
        var limit = rlimit()
        getrlimit(__rlimit_resource_t(RLIMIT_FSIZE.rawValue), &limit)
        let saved = limit
        // SIGXFSZ would kill the process; ignored, the write fails with EFBIG instead.
        let previous = signal(SIGXFSZ, SIG_IGN)
        limit.rlim_cur = 65_536
        setrlimit(__rlimit_resource_t(RLIMIT_FSIZE.rawValue), &limit)
        defer {
            var restore = saved
            setrlimit(__rlimit_resource_t(RLIMIT_FSIZE.rawValue), &restore)
            signal(SIGXFSZ, previous)
        }
        XCTAssertThrowsError(try spool.append(from: source.buffer)) { error in
            XCTAssertEqual((error as? SpoolError)?.code, EFBIG)
        }
        XCTAssertEqual(spool.size + source.buffer.count, 200_000, "no byte is lost: written or still in the source")
        XCTAssertLessThanOrEqual(spool.size, 65_536)
    }
}
