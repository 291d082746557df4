/// One field line of a parsed head: where its name and value lie in the head's bytes.
package struct HeadField {
    package var name: Range<Int>
    package var value: Range<Int>
    /// A tab was trimmed around the value (llhttp takes only spaces around a framing value).
    package var tabAround = false

    /// `field-name ":" OWS field-value OWS` (RFC 9110 §5.5): no whitespace before the colon, no
    /// obs-fold, no control character in the value. The one field parser of requests and
    /// responses.
    static func parse(
        _ raw: UnsafeRawBufferPointer,
        _ line: Range<Int>,
        from sender: Sender
    ) throws(ProxyError) -> HeadField {
        var colon = line.lowerBound
        while colon < line.upperBound && raw[colon] != UInt8(ascii: ":") {
            guard HeaderName.isTokenByte(raw[colon]) else {
                throw sender.malformed(
                    colon == line.lowerBound && (raw[colon] == 0x20 || raw[colon] == 0x09)
                        ? "a folded header line (obs-fold)" : "a header name that is not a token"
                )
            }
            colon += 1
        }
        guard colon < line.upperBound, colon > line.lowerBound else {
            throw sender.malformed("a header line without a name")
        }
        var start = colon + 1
        var end = line.upperBound
        var tabAround = false
        while start < end && (raw[start] == 0x20 || raw[start] == 0x09) {
            tabAround = tabAround || raw[start] == 0x09
            start += 1
        }
        while end > start && (raw[end - 1] == 0x20 || raw[end - 1] == 0x09) {
            tabAround = tabAround || raw[end - 1] == 0x09
            end -= 1
        }
        for index in start..<end where !HeaderName.isFieldValueByte(raw[index]) {
            throw sender.malformed("a control character in a header value")
        }
        return HeadField(name: line.lowerBound..<colon, value: start..<end, tabAround: tabAround)
    }
}

/// The lines of a complete head, up to its empty line. A NUL, or a CR not followed by LF, is an
/// error anywhere. From a client, every line ends with CRLF, as llhttp demands; from the
/// upstream, a bare LF ends a line too (RFC 9112 §2.2).
struct HeadLines {
    let raw: UnsafeRawBufferPointer
    let sender: Sender
    var position = 0

    init(_ raw: UnsafeRawBufferPointer, from sender: Sender) {
        self.raw = raw
        self.sender = sender
    }

    mutating func next() throws(ProxyError) -> Range<Int>? {
        let start = self.position
        var index = start
        while index < self.raw.count {
            switch self.raw[index] {
            case UInt8(ascii: "\n"):
                let crlf = index > start && self.raw[index - 1] == UInt8(ascii: "\r")
                if self.sender.strict && !crlf { throw self.sender.malformed("a line ended by LF without CR") }
                self.position = index + 1
                let end = crlf ? index - 1 : index
                return end == start ? nil : start..<end
            case UInt8(ascii: "\r"):
                guard index + 1 < self.raw.count, self.raw[index + 1] == UInt8(ascii: "\n") else {
                    throw self.sender.malformed("a bare CR (a CR without LF) in the head")
                }
            case 0:
                throw self.sender.malformed("a NUL in the head")
            default:
                break
            }
            index += 1
        }
        throw self.sender.malformed("a head without its empty line")
    }
}

/// What the `Connection` fields of a head say (RFC 9110 §7.6.1): `close`, `keep-alive`, and the
/// other options, which name hop-by-hop fields (`upgrade` among them).
struct ConnectionOptions {
    var close = false
    var keepAlive = false
    var upgrade = false
    var others: [Range<Int>] = []

    mutating func scan(_ raw: UnsafeRawBufferPointer, _ value: Range<Int>) {
        HeaderName.forEachListElement(raw, value) { option in
            if HeaderName.equals(raw, option, "close") {
                self.close = true
            } else if HeaderName.equals(raw, option, "keep-alive") {
                self.keepAlive = true
            } else {
                if HeaderName.equals(raw, option, "upgrade") { self.upgrade = true }
                self.others.append(option)
            }
        }
    }

    /// Whether the connection stays open after the message, for HTTP/1.`minor`.
    func keepsAlive(minor: Int) -> Bool {
        !self.close && (minor >= 1 || self.keepAlive)
    }
}
