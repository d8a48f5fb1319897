import Crypto

/// Payload hashes of SigV4 (`x-amz-content-sha256`).
public enum SigV4Body {
    /// The hex SHA-256 of `body`.
    public static func hashHex(_ body: [UInt8]) -> String { Digest.hex(Digest.sha256(body)) }

    /// The hex SHA-256 of a body held in `chunks`, in order.
    public static func hashHex(chunks: [UnsafeRawBufferPointer]) -> String { Digest.hex(Digest.sha256(parts: chunks)) }

    /// `x-amz-content-sha256: UNSIGNED-PAYLOAD`: the body is not part of the signature.
    public static let unsignedPayload = "UNSIGNED-PAYLOAD"
    /// botocore's default for S3 uploads: an unsigned body in aws-chunked framing with a
    /// trailing checksum (`STREAMING-UNSIGNED-PAYLOAD-TRAILER`).
    public static let streamingUnsignedTrailer = "STREAMING-UNSIGNED-PAYLOAD-TRAILER"
    /// Per-chunk signatures (`STREAMING-AWS4-HMAC-SHA256-PAYLOAD`, and its trailer variant): each
    /// chunk signed with the app's key, which the sidecar cannot re-sign.
    public static let streamingSignedPrefix = "STREAMING-AWS4-HMAC-SHA256-PAYLOAD"
}
