import CZlib

/// gzip (RFC 1952) with zlib: OTLP/HTTP export bodies are sent with `Content-Encoding: gzip`.
public enum Gzip {
    /// `bytes` compressed as one gzip member, or nil if zlib fails (out of memory).
    /// Level 1 by default: on OTLP batches it compresses about as well as zlib's default level 6
    /// at a fraction of the instructions (the exporter's cost per span is mostly deflate otherwise).
    public static func compress(_ bytes: [UInt8], level: Int32 = 1) -> [UInt8]? {
        var stream = z_stream()
        // windowBits 15 + 16: a gzip header and trailer instead of zlib's.
        guard deflateInit2_(&stream, level, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY, ZLIB_VERSION,
                            Int32(MemoryLayout<z_stream>.size)) == Z_OK else { return nil }
        defer { deflateEnd(&stream) }
        var output = [UInt8](repeating: 0, count: Int(deflateBound(&stream, UInt(bytes.count))) + 32)
        var input = bytes
        let status: Int32 = input.withUnsafeMutableBufferPointer { inputBuffer in
            output.withUnsafeMutableBufferPointer { outputBuffer in
                stream.next_in = inputBuffer.baseAddress
                stream.avail_in = UInt32(inputBuffer.count)
                stream.next_out = outputBuffer.baseAddress
                stream.avail_out = UInt32(outputBuffer.count)
                return deflate(&stream, Z_FINISH)
            }
        }
        guard status == Z_STREAM_END else { return nil }
        output.removeSubrange(Int(stream.total_out)...)
        return output
    }
}
