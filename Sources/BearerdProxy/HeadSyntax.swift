/// An error a head parser reports its syntax faults with (``RequestHeadError`` for client
/// requests, ``UpstreamResponseError`` for upstream responses).
protocol HeadSyntaxError: Error {
    static func syntax(_ what: String) -> Self
}

/// One field line of a parsed head: where its name and value lie in the head's bytes.
struct HeadField {
    var name: Range<Int>
    var value: Range<Int>
    /// A tab was trimmed around the value (llhttp takes only spaces around a framing value).
    var tabAround = false

    /// `field-name ":" OWS field-value OWS` (RFC 9110 §5.5): no whitespace before the colon, no
    /// obs-fold, no control character in the value. The one field parser of requests and
    /// responses.
    static func parse<E: HeadSyntaxError>(
        _ raw: UnsafeRawBufferPointer,
        _ line: Range<Int>,
        as: E.Type
    ) throws(E) -> HeadField {
        var colon = line.lowerBound
        while colon < line.upperBound && raw[colon] != UInt8(ascii: ":") {
            guard HeaderName.isTokenByte(raw[colon]) else {
                throw .syntax(
                    colon == line.lowerBound && (raw[colon] == 0x20 || raw[colon] == 0x09)
                        ? "a folded header line (obs-fold)" : "a header name that is not a token"
                )
            }
            colon += 1
        }
        guard colon < line.upperBound, colon > line.lowerBound else { throw .syntax("a header line without a name") }
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
            throw .syntax("a control character in a header value")
        }
        return HeadField(name: line.lowerBound..<colon, value: start..<end, tabAround: tabAround)
    }
}

/// The lines of a complete head, up to its empty line. A NUL, or a CR not followed by LF, is an
/// error anywhere. `strict` (client requests): every line ends with CRLF, as llhttp demands;
/// otherwise (upstream responses) a bare LF ends a line too (RFC 9112 §2.2).
struct HeadLines<Failure: HeadSyntaxError> {
    let raw: UnsafeRawBufferPointer
    let strict: Bool
    var position = 0

    init(_ raw: UnsafeRawBufferPointer, strict: Bool) {
        self.raw = raw
        self.strict = strict
    }

    mutating func next() throws(Failure) -> Range<Int>? {
        let start = self.position
        var index = start
        while index < self.raw.count {
            switch self.raw[index] {
            case UInt8(ascii: "\n"):
                let crlf = index > start && self.raw[index - 1] == UInt8(ascii: "\r")
                if self.strict && !crlf { throw .syntax("a line ended by LF without CR") }
                self.position = index + 1
                let end = crlf ? index - 1 : index
                return end == start ? nil : start..<end
            case UInt8(ascii: "\r"):
                guard index + 1 < self.raw.count, self.raw[index + 1] == UInt8(ascii: "\n") else {
                    throw .syntax("a bare CR (a CR without LF) in the head")
                }
            case 0:
                throw .syntax("a NUL in the head")
            default:
                break
            }
            index += 1
        }
        throw .syntax("a head without its empty line")
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

extension RequestHeadError: HeadSyntaxError {
    static func syntax(_ what: String) -> Self { .malformed(what) }
}

extension UpstreamResponseError: HeadSyntaxError {
    static func syntax(_ what: String) -> Self { .malformed(what) }
}
