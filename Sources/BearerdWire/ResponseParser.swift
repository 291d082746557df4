import NIOCore

/// Splits the bytes an upstream connection reads into response parts (RFC 9112 §6.3 framing).
///
/// Pull-style: `next(from:)` returns the next part, or `nil` when it needs more bytes; bytes it
/// has not consumed stay in the buffer for the caller to keep. Body parts are slices of the read
/// buffers, never copies. Informational (1xx) responses are dropped: bearerd answers
/// `Expect: 100-continue` itself. A 101 is taken only after a request that asked for an upgrade
/// (`proxy.allow_upgrades`): it is the last part; the bytes after it are the new protocol's.
package struct ResponseParser {
    package enum Part {
        case head(ResponseHead)
        case body(ByteBuffer)
        case end
    }

    private enum State {
        /// No request is waiting for a response; any byte is an error.
        case idle
        /// `scanned` bytes were searched for the end of the head already; `upgrade`: the request
        /// asked to switch protocols, so a 101 may come.
        case head(forHEAD: Bool, upgrade: Bool, scanned: Int)
        /// The body (if any) is complete; `.end` is next.
        case ending
        case body(BodyFramer)
        case untilClose
    }

    /// A 101 to a request that offered no upgrade: a broken upstream, never spliced; both
    /// connections close.
    package static let unaskedSwitch = ProxyError.badResponse("101 Switching Protocols, which nobody asked for")

    /// Upper bound on a response head, and on a chunked body's trailer section.
    static let maxHeadSize = 256 * 1024

    private var state = State.idle
    /// The fields array of the last head, parsed into again once that head is gone.
    private var fieldStorage = FieldStorage()

    package init() {}

    /// A request went out; its response comes next. A response to HEAD has no body; a request
    /// that asked for an upgrade may be answered 101.
    package mutating func expectResponse(toHEAD: Bool, upgrade: Bool = false) {
        self.state = .head(forHEAD: toHEAD, upgrade: upgrade, scanned: 0)
    }

    /// Forgets the exchange in progress (the connection goes back to the pool, or closes).
    package mutating func reset() {
        self.state = .idle
    }

    /// The body ends where the connection does (no Content-Length, not chunked).
    package var endsAtClose: Bool {
        if case .untilClose = self.state { return true }
        return false
    }

    package mutating func next(from buffer: inout ByteBuffer) throws(ProxyError) -> Part? {
        while true {
            switch self.state {
            case .idle:
                return nil
            case .head(let forHEAD, let upgrade, let scanned):
                guard let end = Self.endOfHead(buffer, from: scanned) else {
                    if buffer.readableBytes > Self.maxHeadSize { throw .badResponse("a head over 256 KiB") }
                    self.state = .head(forHEAD: forHEAD, upgrade: upgrade, scanned: max(0, buffer.readableBytes - 3))
                    return nil
                }
                guard end <= Self.maxHeadSize else { throw .badResponse("a head over 256 KiB") }
                var fields = self.fieldStorage.take()
                var head = try ResponseHead.parse(buffer.readSlice(length: end)!, fields: &fields)
                self.fieldStorage.keep(head.fields)
                if head.status == 101 {
                    guard upgrade else { throw Self.unaskedSwitch }
                    // The connection now speaks another protocol: nothing more to parse.
                    self.state = .idle
                    return .head(head)
                }
                if head.status < 200 {
                    self.state = .head(forHEAD: forHEAD, upgrade: upgrade, scanned: 0)
                    continue
                }
                if forHEAD || head.status == 204 || head.status == 304 {
                    self.state = .ending
                } else if head.isChunked {
                    self.state = .body(BodyFramer(chunkedWithTrailerLimit: Self.maxHeadSize, from: .upstream))
                } else if let length = head.contentLength {
                    self.state = length == 0 ? .ending : .body(BodyFramer(length: length, from: .upstream))
                } else {
                    head.keepAlive = false
                    self.state = .untilClose
                }
                return .head(head)
            case .ending:
                self.state = .idle
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
            case .untilClose:
                guard buffer.readableBytes > 0 else { return nil }
                return .body(buffer.readSlice(length: buffer.readableBytes)!)
            }
        }
    }

    /// The length of the head at the start of `buffer` (through its empty line), if it is all there.
    private static func endOfHead(_ buffer: ByteBuffer, from scanned: Int) -> Int? {
        buffer.withUnsafeReadableBytes { raw in
            var index = scanned
            while index < raw.count {
                if raw[index] == UInt8(ascii: "\n") {
                    if index + 1 < raw.count && raw[index + 1] == UInt8(ascii: "\n") { return index + 2 }
                    if index + 2 < raw.count && raw[index + 1] == UInt8(ascii: "\r") && raw[index + 2] == 0x0A {
                        return index + 3
                    }
                }
                index += 1
            }
            return nil
        }
    }
}
