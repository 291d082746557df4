import NIOCore

/// The body of one message framed by a length or by chunks (RFC 9112 §6.2, §7.1), cut out of
/// the bytes as they come: the one body reader of request and response parsers. A body piece is
/// a slice of the read buffer, uncopied, except that small chunks that came together are joined
/// into one piece (``joinLimit``); chunked bodies give their data only, and trailer fields are
/// read and dropped (RFC 9110 §6.5.1 lets a proxy discard them).
///
/// Joining is what keeps every count of body bytes a count of memory: a read of one-byte chunks
/// would otherwise become thousands of pieces, each a slice holding on to its read buffer and
/// each a separate part held, kept or written (issue 35).
///
/// From a client (as llhttp): lines end with CRLF and trailer fields must be fields, without
/// framing fields; from the upstream, a bare LF ends a line and trailers are only bounded.
struct BodyFramer {
    enum Piece {
        case data(ByteBuffer)
        /// The body is complete.
        case done
    }

    private enum State {
        case fixed(remaining: Int)
        case chunkSize
        case chunkData(remaining: Int)
        case chunkDataEnd
        case trailers(size: Int)
        case done
    }

    /// Upper bound on a chunk-size line with its extensions.
    static var maxChunkLine: Int { 4096 }

    /// Chunks smaller than this that are already in the buffer together are copied into one
    /// piece of at most this many bytes; a larger chunk stays a slice of its own.
    static var joinLimit: Int { 8192 }

    private var state: State
    private let sender: Sender
    /// Upper bound on the trailer section.
    private let trailerLimit: Int

    /// A body of `length` bytes.
    init(length: Int, from sender: Sender) {
        self.state = length == 0 ? .done : .fixed(remaining: length)
        self.sender = sender
        self.trailerLimit = 0
    }

    /// A chunked body whose trailer section may take `trailerLimit` bytes.
    init(chunkedWithTrailerLimit trailerLimit: Int, from sender: Sender) {
        self.state = .chunkSize
        self.sender = sender
        self.trailerLimit = trailerLimit
    }

    /// The next piece of the body, or `nil` when it needs more bytes. Small chunks that follow
    /// each other in `buffer` come as one piece (``joinLimit``).
    mutating func next(from buffer: inout ByteBuffer) throws(ProxyError) -> Piece? {
        guard case .data(let first)? = try self.step(from: &buffer, upTo: Int.max) else {
            return self.isDone ? .done : nil
        }
        guard first.readableBytes < Self.joinLimit, buffer.readableBytes > 0 else { return .data(first) }
        var joined: ByteBuffer?
        while buffer.readableBytes > 0 {
            let room = Self.joinLimit - (joined?.readableBytes ?? first.readableBytes)
            guard room > 0, case .data(let more)? = try self.step(from: &buffer, upTo: room) else { break }
            if joined == nil {
                let expected = first.readableBytes + more.readableBytes + buffer.readableBytes
                var start = ByteBufferAllocator().buffer(capacity: min(Self.joinLimit, expected))
                start.writeImmutableBuffer(first)
                joined = start
            }
            joined!.writeImmutableBuffer(more)
        }
        return .data(joined ?? first)
    }

    private var isDone: Bool {
        if case .done = self.state { return true }
        return false
    }

    /// One step: the next piece of at most `limit` bytes, `.done`, or `nil` when it needs more
    /// bytes. (A chunk larger than `limit` comes in more than one piece.)
    private mutating func step(from buffer: inout ByteBuffer, upTo limit: Int) throws(ProxyError) -> Piece? {
        while true {
            switch self.state {
            case .done:
                return .done
            case .fixed(let remaining):
                guard buffer.readableBytes > 0 else { return nil }
                let count = min(remaining, buffer.readableBytes, limit)
                self.state = count == remaining ? .done : .fixed(remaining: remaining - count)
                return .data(buffer.readSlice(length: count)!)
            case .chunkSize:
                guard let line = try self.line(in: &buffer, limit: Self.maxChunkLine) else { return nil }
                let size: Int
                switch ChunkSize.parse(line) {
                case .parsed(let parsed): size = parsed
                case .refused(let what): throw self.sender.malformed(what)
                }
                self.state = size == 0 ? .trailers(size: 0) : .chunkData(remaining: size)
            case .chunkData(let remaining):
                guard buffer.readableBytes > 0 else { return nil }
                let count = min(remaining, buffer.readableBytes, limit)
                self.state = count == remaining ? .chunkDataEnd : .chunkData(remaining: remaining - count)
                return .data(buffer.readSlice(length: count)!)
            case .chunkDataEnd:
                guard let line = try self.line(in: &buffer, limit: 2) else { return nil }
                guard line.readableBytes == 0 else { throw self.sender.malformed("a chunk longer than its size") }
                self.state = .chunkSize
            case .trailers(let size):
                guard let line = try self.line(in: &buffer, limit: self.trailerLimit - size) else { return nil }
                if line.readableBytes == 0 {
                    self.state = .done
                } else {
                    if self.sender.strict { try Self.checkTrailer(line) }
                    self.state = .trailers(size: size + line.readableBytes + 2)
                }
            }
        }
    }

    /// One line (without its line end) when a whole one is there; over `limit` bytes without a
    /// line end is an error.
    private func line(in buffer: inout ByteBuffer, limit: Int) throws(ProxyError) -> ByteBuffer? {
        let lineEnd = buffer.withUnsafeReadableBytes { raw in raw.firstIndex(of: UInt8(ascii: "\n")) }
        guard let lineEnd else {
            if buffer.readableBytes > max(0, limit) + 1 {
                throw self.sender.malformed("an over-long line in a chunked body")
            }
            return nil
        }
        let crlf = lineEnd > 0 && buffer.getInteger(at: buffer.readerIndex + lineEnd - 1, as: UInt8.self) == 0x0D
        if self.sender.strict && !crlf {
            throw self.sender.malformed("a line ended by LF without CR in a chunked body")
        }
        let line = buffer.readSlice(length: crlf ? lineEnd - 1 : lineEnd)!
        buffer.moveReaderIndex(forwardBy: crlf ? 2 : 1)
        guard line.readableBytes <= limit else { throw self.sender.malformed("an over-long line in a chunked body") }
        return line
    }

    /// A trailer field: the same syntax as a header field, and no framing field (RFC 9110
    /// §6.5.1; llhttp refuses them too).
    private static func checkTrailer(_ line: ByteBuffer) throws(ProxyError) {
        try line.withUnsafeReadableBytes { raw throws(ProxyError) in
            let field = try HeadField.parse(raw, 0..<raw.count, from: .client)
            if HeaderName.equals(raw, field.name, "transfer-encoding")
                || HeaderName.equals(raw, field.name, "content-length")
            {
                throw .badRequest("a framing field in the trailer")
            }
        }
    }
}
