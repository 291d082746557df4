import NIOCore

/// HTTP/1.1 serialisation straight into a `ByteBuffer` (RFC 9112). bearerd writes its own heads
/// and chunk framing instead of going through NIO's HTTP encoders: one buffer per head, no
/// `HTTPHeaders` rebuilt per message, and no extra pipeline hop.
package enum WireFormat {
    /// `0\r\n\r\n`: the last chunk of a chunked body, with no trailers.
    package static let lastChunk = ByteBuffer(staticString: "0\r\n\r\n")
    package static let crlf = ByteBuffer(staticString: "\r\n")
    /// The interim answer to `Expect: 100-continue`, which bearerd gives itself.
    package static let continueResponse = ByteBuffer(staticString: "HTTP/1.1 100 Continue\r\n\r\n")
    package static let empty = ByteBuffer()

    /// Bodies and chunks up to this size are copied into one buffer with what frames them (the
    /// head before, the chunk's size line and CRLF around) and leave in one write; larger ones
    /// are written as they are, uncopied. A copy this small costs less than the writes it saves.
    package static let copiedBodyLimit = 2048

    /// A whole chunk of `body`: its size line, its bytes and the CRLF after them.
    package static func writeChunk(_ body: ByteBuffer, into buffer: inout ByteBuffer) {
        buffer.writeString(String(body.readableBytes, radix: 16))
        buffer.writeStaticString("\r\n")
        buffer.writeImmutableBuffer(body)
        buffer.writeStaticString("\r\n")
    }

    /// `body` framed as a whole chunk in a buffer of its own when it is small enough to copy
    /// (``copiedBodyLimit``); `nil` otherwise.
    package static func smallChunk(_ body: ByteBuffer, allocator: ByteBufferAllocator) -> ByteBuffer? {
        guard body.readableBytes <= Self.copiedBodyLimit else { return nil }
        var chunk = allocator.buffer(capacity: body.readableBytes + 12)
        Self.writeChunk(body, into: &chunk)
        return chunk
    }

    /// The size line that starts a chunk of `length` bytes.
    package static func chunkHeader(length: Int, allocator: ByteBufferAllocator) -> ByteBuffer {
        var buffer = allocator.buffer(capacity: 18)
        buffer.writeString(String(length, radix: 16))
        buffer.writeStaticString("\r\n")
        return buffer
    }

    /// The status line of a response to a client speaking `version` (1.0 or 1.1).
    package static func writeStatusLine(
        code: Int,
        reason: String,
        version: WireVersion,
        into buffer: inout ByteBuffer
    ) {
        buffer.writeStaticString(version.minor == 0 ? "HTTP/1.0 " : "HTTP/1.1 ")
        buffer.writeString(String(code))
        buffer.writeInteger(UInt8(ascii: " "))
        buffer.writeString(reason)
        buffer.writeStaticString("\r\n")
    }

    @inlinable @inline(__always)
    package static func writeField(_ name: String, _ value: String, into buffer: inout ByteBuffer) {
        buffer.writeHeadField(name, value)
    }

    @inlinable @inline(__always)
    package static func writeField(_ name: StaticString, _ value: String, into buffer: inout ByteBuffer) {
        buffer.writeHeadField(name, value)
    }
}
