import EventLoop
@testable import Proxy
import TestSupport
import XCTest

/// A worker closing everything (its loop shuts down) lets go of every HTTP/2 connection: none
/// stays held in a cycle with the worker's context (which holds the loop and its event base).
final class WorkerContextCloseAllTests: XCTestCase {
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

    func testClosingEverythingEndsAConnectionStillSendingItsLastFrames() throws {
        // A connection that failed closes after its GOAWAY is out; the app does not read it, so
        // the close waits, its flush callback holding the connection (and the worker's context).
        let harness = try SessionHarness()
        let client = MemoryStream(loop: harness.loop)
        weak var weakSession: HTTP2ServerSession?
        do {
            let session = HTTP2ServerSession(client: client, context: harness.context, intercepted: nil)
            weakSession = session
            harness.context.adoptHTTP2(session)
            session.start()
            client.receive(Array("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".utf8) + [0, 0, 0, 0, 0, 0, 0, 0, 0])  // DATA on stream 0
        }
        XCTAssertEqual(client.ending, .flushing, "closing after its last frames")
        XCTAssertNotNil(weakSession)
        XCTAssertEqual(harness.context.clientConnections, 1)
        harness.context.closeAll()
        XCTAssertEqual(client.ending, .closed)
        XCTAssertEqual(harness.context.clientConnections, 0)
        XCTAssertNil(weakSession, "let go once the worker closed everything")
    }
}
