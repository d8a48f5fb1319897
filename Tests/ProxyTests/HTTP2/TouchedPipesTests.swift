@testable import Proxy
import XCTest

/// The list of an HTTP/2 connection's pipes to look at: each once per pass, again in a later
/// pass when touched meanwhile, and no more passes than asked for.
final class TouchedPipesTests: XCTestCase {
    private final class Pipe: TouchablePipe {
        let name: String
        var isTouched = false
        init(_ name: String) { self.name = name }
    }

    func testAPipeTouchedTwiceIsLookedAtOnce() {
        let touched = TouchedPipes<Pipe>()
        let a = Pipe("a"), b = Pipe("b")
        touched.append(a)
        touched.append(b)
        touched.append(a)
        var looked: [String] = []
        var passes = 0
        touched.drain(passes: 8, look: { looked.append($0.name) }, afterPass: { passes += 1 })
        XCTAssertEqual(looked, ["a", "b"])
        XCTAssertEqual(passes, 1)
        XCTAssertTrue(touched.isEmpty)
        XCTAssertFalse(a.isTouched || b.isTouched)
    }

    func testAPipeTouchedWhileAPassLooksIsLookedAtAgainInTheNext() {
        let touched = TouchedPipes<Pipe>()
        let a = Pipe("a"), b = Pipe("b")
        touched.append(a)
        touched.append(b)
        var looked: [String] = []
        // Looking at `a` touches `b` (listed in this pass, not yet looked at) and `a` itself.
        touched.drain(passes: 8, look: { pipe in
            looked.append(pipe.name)
            if pipe === a && looked.count == 1 {
                touched.append(b)
                touched.append(a)
            }
        }, afterPass: {})
        XCTAssertEqual(looked, ["a", "b", "a"],
                       "b, touched before its own look in the first pass, once; a, touched by its own look, again in the next")
        XCTAssertTrue(touched.isEmpty)
    }

    func testAPipeTouchedByALaterPipesLookIsLookedAtAgainInTheNextPass() {
        let touched = TouchedPipes<Pipe>()
        let a = Pipe("a"), b = Pipe("b")
        touched.append(a)
        touched.append(b)
        var looked: [String] = []
        var passes = 0
        // Looking at `b` touches `a`, whose look in this pass is over: it must be looked at again.
        touched.drain(passes: 8, look: { pipe in
            looked.append(pipe.name)
            if pipe === b && passes == 0 { touched.append(a) }
        }, afterPass: { passes += 1 })
        XCTAssertEqual(looked, ["a", "b", "a"])
        XCTAssertEqual(passes, 2)
        XCTAssertTrue(touched.isEmpty)
    }

    func testALookThatDrainsAgainLeavesTheOuterPassWhole() {
        let touched = TouchedPipes<Pipe>()
        let a = Pipe("a"), b = Pipe("b"), c = Pipe("c")
        touched.append(a)
        touched.append(b)
        var looked: [String] = []
        // A look that runs a nested turn (as a delivery can): the nested drain takes only what
        // was touched since, and the outer pass goes on with its own pipes.
        touched.drain(passes: 8, look: { pipe in
            looked.append(pipe.name)
            if pipe === a {
                touched.append(c)
                touched.drain(passes: 8, look: { looked.append("nested " + $0.name) }, afterPass: {})
            }
        }, afterPass: {})
        XCTAssertEqual(looked, ["a", "nested c", "b"])
        XCTAssertTrue(touched.isEmpty)
    }

    func testPassesAreBoundedAndTheRestWaits() {
        let touched = TouchedPipes<Pipe>()
        let a = Pipe("a")
        touched.append(a)
        var looks = 0
        // A pipe that touches itself on every look would loop forever without the bound.
        touched.drain(passes: 3, look: { pipe in
            looks += 1
            touched.append(pipe)
        }, afterPass: {})
        XCTAssertEqual(looks, 3)
        XCTAssertFalse(touched.isEmpty, "what is left waits for the next turn")
        XCTAssertTrue(a.isTouched)
    }

    func testAPipeForgottenByAClosedConnectionsListIsListedByTheNext() {
        let closing = TouchedPipes<Pipe>(), next = TouchedPipes<Pipe>()
        let a = Pipe("a")
        closing.append(a)
        closing.removeAll()
        XCTAssertTrue(closing.isEmpty)
        XCTAssertFalse(a.isTouched)
        next.append(a)
        var looked: [String] = []
        next.drain(passes: 8, look: { looked.append($0.name) }, afterPass: {})
        XCTAssertEqual(looked, ["a"], "listed, and looked at, by the connection it goes on with")
    }
}
