import EventLoop
@testable import Proxy
import TestSupport
import XCTest

/// The worker's budget of HTTP/2 stream starts per loop iteration, and the connections waiting
/// for a share of it.
final class HTTP2StreamStartsTests: XCTestCase {
    func testClosingEverythingForgetsTheConnectionsWaitingToStartStreams() throws {
        // A waiting connection holds its sessions, each its worker's context, which holds the
        // budget: a stopped worker whose refill never came kept all of it (loop, base, eventfd).
        let harness = try SessionHarness()
        weak var weakSession: HTTP2ServerSession?
        do {
            let session = HTTP2ServerSession(client: MemoryStream(loop: harness.loop), context: harness.context,
                                             intercepted: nil)
            weakSession = session
            harness.context.http2Starts.wait(session)
        }
        XCTAssertNotNil(weakSession, "held while it waits")
        harness.context.closeAll()
        XCTAssertNil(weakSession, "let go once the worker closed everything")
    }
}
