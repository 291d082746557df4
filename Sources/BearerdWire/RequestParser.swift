import NIOCore

/// The limits a request head is parsed under (`proxy.max_request_line`, `proxy.max_header_size`,
/// `proxy.max_header_count`).
package struct RequestLimits: Sendable {
    package var maxRequestLine: Int
    package var maxHeaderSize: Int
    package var maxHeaderCount: Int

    package init(maxRequestLine: Int, maxHeaderSize: Int, maxHeaderCount: Int) {
        self.maxRequestLine = maxRequestLine
        self.maxHeaderSize = maxHeaderSize
        self.maxHeaderCount = maxHeaderCount
    }

    /// The longest request line: the target, a method and the version around it.
    var requestLineBytes: Int { self.maxRequestLine + 64 }
    /// The longest whole head: the fields with their colons, whitespace and line ends.
    var headBytes: Int { self.requestLineBytes + self.maxHeaderSize + 8 * self.maxHeaderCount + 1024 }
}

/// Splits the bytes a client connection reads into request parts (RFC 9112 §6.3 framing).
///
/// Pull-style, like ``ResponseParser``: `next(from:)` returns the next part, or `nil` when it
/// needs more bytes (or may not go on); bytes it has not consumed stay in the buffer. Body parts
/// are slices of the read buffers, never copies; chunked bodies give their data only. After a
/// request that asks to upgrade, or that closes the connection, nothing more is parsed: the
/// bytes after it belong to the new protocol, or are dropped as the connection closes.
package struct RequestParser {
    package enum Part {
        case head(RequestHead)
        case body(ByteBuffer)
        case end
    }

    private enum State {
        /// Waiting for a head; `scanned` bytes were searched for its end already, and the
        /// request line ended among them or not: each byte is looked at once, however the head
        /// is split into reads.
        case head(scanned: Int, lineEnded: Bool)
        case body(BodyFramer)
        case ending
        /// After an upgrade request, a last request or an error: nothing more is parsed.
        case stopped
    }

    /// Empty lines taken before a request line (RFC 9112 §2.2: some clients send a CRLF after a
    /// POST body).
    static let maxLeadingEmptyLines = 4

    package private(set) var limits: RequestLimits
    private var state = State.head(scanned: 0, lineEnded: false) {
        didSet {
            self.betweenRequests = if case .head = self.state { true } else { false }
            self.isStopped = if case .stopped = self.state { true } else { false }
        }
    }
    private var lastOnConnection = false
    /// The fields array of the last head, parsed into again once that head is gone.
    private var fieldStorage = FieldStorage()

    package init(limits: RequestLimits) {
        self.limits = limits
    }

    /// The same parser, where it is in the request, with the heads after this one parsed under
    /// `limits` (a reload's: the request in progress is taken over by the new settings).
    package func continued(under limits: RequestLimits) -> RequestParser {
        var parser = self
        parser.limits = limits
        return parser
    }

    // The two facts the handler asks between reads are stored, set with `state`: a stored
    // property is read in place from another module, where a computed one made the caller copy
    // the whole parser for the call (4 retains and 4 releases per request, counted with
    // `scripts/bench-count`).

    /// Whether the parser waits for the next request's head (a request in progress has ended).
    package private(set) var betweenRequests = true
    /// Whether nothing more will be parsed (after an upgrade request, a last request or an error).
    package private(set) var isStopped = false

    package mutating func next(from buffer: inout ByteBuffer) throws(ProxyError) -> Part? {
        do {
            return try self.step(&buffer)
        } catch {
            self.state = .stopped
            throw error
        }
    }

    private mutating func step(_ buffer: inout ByteBuffer) throws(ProxyError) -> Part? {
        while true {
            switch self.state {
            case .stopped:
                return nil
            case .head(let scanned, let lineEnded):
                guard try self.skipLeadingEmptyLines(&buffer) else { return nil }
                let (end, ended) = try self.endOfHead(buffer, from: scanned, lineEnded: lineEnded)
                guard let end else {
                    self.state = .head(scanned: buffer.readableBytes, lineEnded: ended)
                    return nil
                }
                var fields = self.fieldStorage.take()
                let head = try RequestHead.parse(buffer.readSlice(length: end)!, limits: self.limits, fields: &fields)
                self.fieldStorage.keep(head.fields)
                // After an upgrade, or a request that closes the connection, nothing more is
                // HTTP (llhttp refuses data after `Connection: close`, too).
                self.lastOnConnection = head.isUpgrade || !head.keepAlive
                if head.isChunked {
                    self.state = .body(BodyFramer(chunkedWithTrailerLimit: self.limits.maxHeaderSize, from: .client))
                } else if let length = head.contentLength, length > 0 {
                    self.state = .body(BodyFramer(length: length, from: .client))
                } else {
                    self.state = .ending
                }
                return .head(head)
            case .ending:
                self.state = self.lastOnConnection ? .stopped : .head(scanned: 0, lineEnded: false)
                return .end
            case .body(var framer):
                switch try framer.next(from: &buffer) {
                case .data(let piece):
                    self.state = .body(framer)
                    return .body(piece)
                case .done:
                    self.state = .ending
                case nil:
                    self.state = .body(framer)
                    return nil
                }
            }
        }
    }

    /// Drops the empty lines a request may follow; `false` when the buffer ends among them.
    private func skipLeadingEmptyLines(_ buffer: inout ByteBuffer) throws(ProxyError) -> Bool {
        var skipped = 0
        while let first = buffer.getInteger(at: buffer.readerIndex, as: UInt8.self), first == UInt8(ascii: "\r") {
            guard let second = buffer.getInteger(at: buffer.readerIndex + 1, as: UInt8.self) else { return false }
            guard second == UInt8(ascii: "\n") else { throw .badRequest("a CR without LF in the head") }
            skipped += 1
            guard skipped <= Self.maxLeadingEmptyLines else { throw .badRequest("empty lines instead of a request") }
            buffer.moveReaderIndex(forwardBy: 2)
        }
        return buffer.readableBytes > 0
    }

    /// The length of the head at the start of `buffer` (through its empty line), if it is all
    /// there, and whether the request line has ended; a request line or a head over its limit is
    /// an error as soon as it shows.
    private func endOfHead(
        _ buffer: ByteBuffer,
        from scanned: Int,
        lineEnded: Bool
    ) throws(ProxyError) -> (end: Int?, lineEnded: Bool) {
        let limits = self.limits
        let (end, lineEnded, bareLF) = buffer.withUnsafeReadableBytes { raw -> (Int?, Bool, Bool) in
            var lineEnded = lineEnded
            var index = scanned
            while index < raw.count {
                if raw[index] == UInt8(ascii: "\n") {
                    // A bare LF would never end the head: refused now, not at the time limit.
                    guard index > 0, raw[index - 1] == UInt8(ascii: "\r") else { return (nil, lineEnded, true) }
                    if !lineEnded {
                        lineEnded = true
                        if index > limits.requestLineBytes { return (nil, false, false) }
                    }
                    if index >= 3 && raw[index - 2] == UInt8(ascii: "\n") && raw[index - 3] == UInt8(ascii: "\r") {
                        return (index + 1, true, false)
                    }
                }
                index += 1
            }
            return (nil, lineEnded, false)
        }
        if bareLF { throw .badRequest("a line ended by LF without CR") }
        if !lineEnded && buffer.readableBytes > limits.requestLineBytes { throw .targetTooLong }
        if (end ?? buffer.readableBytes) > limits.headBytes { throw .headTooLarge }
        return (end, lineEnded)
    }
}
