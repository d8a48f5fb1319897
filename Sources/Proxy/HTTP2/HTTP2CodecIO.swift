import EventLoop
import HTTP2

/// How the proxy's HTTP/2 connections — an app's (``HTTP2ServerSession``) and an upstream's
/// (``HTTP2UpstreamConnection``) — move bytes between their socket and their ``HTTP2Codec``.
enum HTTP2CodecIO {
    /// Bytes decoded per call: a large read is decoded in pieces, each piece's events handled
    /// before the next is decoded.
    static let receiveChunk = 64 * 1024

    /// Decodes what `input` holds, handing each piece's events to `handle` (given, so it may move
    /// them out instead of copying them), while `open()` says
    /// the connection still is. A protocol error drops the rest of the input and throws (the
    /// codec has queued its `GOAWAY`).
    static func receive(_ input: EventBuffer, codec: HTTP2Codec, while open: () -> Bool,
                        handle: (consuming [HTTP2Event]) -> Void) throws(HTTP2CodecError) {
        while !input.isEmpty && open() {
            let events: [HTTP2Event]
            do {
                events = try input.withContiguousPrefix(receiveChunk) { bytes throws(HTTP2CodecError) in
                    try codec.receive(bytes)
                }
            } catch {
                input.drain(input.count)
                throw error
            }
            input.drain(min(input.count, receiveChunk))
            handle(consume events)
        }
    }

    /// Moves the codec's frames into `stream`'s output while it holds less than `limit` bytes
    /// (frames beyond wait in the codec, and the streams behind them in their own buffers);
    /// returns the events sending led to. With nothing queued it touches neither (a turn looks
    /// several times, most often with nothing to send: each look cost nghttp2's whole send
    /// path and a flush scheduled for nothing).
    static func send(_ codec: HTTP2Codec, to stream: any ByteStream, limit: Int) throws(HTTP2CodecError) -> [HTTP2Event] {
        guard codec.wantsToSend else { return [] }
        let output = stream.output
        let room = limit - output.count
        guard room > 0 else { return [] }
        return try codec.send(limit: room) { bytes in output.append(bytes) }
    }
}

/// A pipe a ``TouchedPipes`` list holds: the mark says it is in the list already.
protocol TouchablePipe: AnyObject {
    /// The pipe waits in its connection's list to be looked at.
    var isTouched: Bool { get set }
}

/// The pipes of an HTTP/2 connection whose state changed since the connection last looked at
/// them: a turn looks at each once per pass, and since looking at one may touch others (a
/// delivery makes a session write), passes repeat, boundedly. A pipe is listed once however
/// often it is touched (its mark, not a set: no hashing, no allocation per pass).
final class TouchedPipes<Pipe: TouchablePipe> {
    private var pipes: [Pipe] = []
    /// The storage of the last pass, kept for the next (the two swap: both keep their capacity).
    private var spare: [Pipe] = []

    /// Whether none waits to be looked at.
    var isEmpty: Bool { pipes.isEmpty }

    /// `pipe` changed.
    func append(_ pipe: Pipe) {
        guard !pipe.isTouched else { return }
        pipe.isTouched = true
        pipes.append(pipe)
    }

    /// Forgets every listed pipe, unmarked (its connection closed: a pipe that goes on, on
    /// another connection, must be listable there).
    func removeAll() {
        for pipe in pipes { pipe.isTouched = false }
        pipes.removeAll()
    }

    /// Looks at each touched pipe once (`look`), then runs `afterPass`; again while pipes were
    /// touched meanwhile, at most `passes` times (the rest wait for the next turn).
    func drain(passes: Int, look: (Pipe) -> Void, afterPass: () -> Void) {
        var pass = 0
        // (Stops at the first pass with nothing touched: most turns need one.)
        while pass < passes && !pipes.isEmpty {
            pass += 1
            // The pass's pipes move to a local that only this pass reaches (a look may touch
            // pipes, or run a nested turn): it keeps each alive while it is looked at, so the
            // walk need not retain it (``Array/forEachUnretained(_:)``).
            var batch: [Pipe] = []
            swap(&batch, &spare)
            swap(&batch, &pipes)
            // Each unmarked just before its look: touched by an earlier pipe's look, it is still
            // listed and this pass looks at it anyway; touched by its own or a later one's, it is
            // listed again for the next pass.
            batch.forEachUnretained { pipe in
                pipe.isTouched = false
                look(pipe)
            }
            // (One at a time: `removeAll(keepingCapacity:)` released them through the runtime's
            // generic array destroy, some 20 instructions more a pipe than a release.)
            while !batch.isEmpty { batch.removeLast() }
            if spare.capacity < batch.capacity { swap(&spare, &batch) }
            afterPass()
        }
    }
}
