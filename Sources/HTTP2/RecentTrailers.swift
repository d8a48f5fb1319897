import Glibc
import HTTP1

/// The last trailer section a connection received, its bytes and the fields made of them: a
/// next section with the same bytes (a gRPC server's `grpc-status: 0` after every call) takes
/// the same ``HTTP1/HTTPFields``, not a String made anew for each name and value and an array
/// for them (~900 instructions a gRPC call). Only a small section is kept (it stays as long as
/// the connection).
struct RecentTrailers {
    /// The kept section's names and values, back to back.
    private var bytes: [UInt8] = []
    /// Where each of its names and values ends in ``bytes``.
    private var ends: [Int] = []
    /// The fields made of it; nil when none is kept.
    private var fields: HTTPFields?

    /// The largest section kept, in bytes of names and values.
    static let limit = 256

    /// The fields of the trailer section `head` holds.
    mutating func fields(of head: HTTP2Head) -> HTTPFields {
        let same = head.withFieldStorage { bytes, ends in
            fields != nil && bytes.count == self.bytes.count && ends.elementsEqual(self.ends)
                && self.bytes.withUnsafeBufferPointer { kept in
                    bytes.isEmpty || memcmp(kept.baseAddress!, bytes.baseAddress!, bytes.count) == 0
                }
        }
        if same, let fields { return fields }
        let made = head.fields
        head.withFieldStorage { bytes, ends in
            self.bytes.removeAll(keepingCapacity: true)
            self.ends.removeAll(keepingCapacity: true)
            guard bytes.count <= Self.limit else {
                fields = nil
                return
            }
            self.bytes.append(contentsOf: bytes)
            self.ends.append(contentsOf: ends)
            fields = made
        }
        return made
    }
}
