import CLibevent
import Glibc

/// An `evbuffer` that belongs to no connection (a staging area), freed with this object.
public final class OwnedEventBuffer {
    /// The buffer's contents.
    public let buffer: EventBuffer

    /// Allocates an empty buffer.
    public init() {
        guard let raw = evbuffer_new() else { fatalError("evbuffer_new: out of memory") }
        buffer = EventBuffer(raw)
    }

    deinit { evbuffer_free(buffer.raw) }
}
