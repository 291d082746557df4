import NIOCore

/// An upstream response head as bearerd parsed it (RFC 9112 §4, §5): the head's own bytes and
/// where each field lies in them, so that forwarding a field copies bytes and allocates nothing.
/// The parse is strict: what a lenient parser would guess at is an error, never a guess.
package struct ResponseHead {
    package typealias Field = HeadField

    /// The head from the status line to the empty line; its reader index is 0.
    package var bytes: ByteBuffer
    package var minorVersion: Int
    package var status: Int
    package var reason: Range<Int>
    package var fields: [Field] = []
    /// The one Content-Length value (repeats must agree).
    package var contentLength: Int?
    package var isChunked = false
    /// Whether the upstream keeps the connection open after this response.
    package var keepAlive = true
    /// Names the `Connection` header lists besides `close` and `keep-alive`: hop-by-hop too.
    package var connectionOptions: [Range<Int>] = []

    /// The value of the first field called `name` (lower case), as text.
    package func firstValue(of name: StaticString) -> String? {
        self.values(of: name).first
    }

    /// The values of every field called `name` (lower case), as text.
    package func values(of name: StaticString) -> [String] {
        self.bytes.withUnsafeReadableBytes { raw in
            self.fields.filter { HeaderName.equals(raw, $0.name, name) }.map {
                String(decoding: UnsafeRawBufferPointer(rebasing: raw[$0.value]), as: UTF8.self)
            }
        }
    }

    /// Parses a complete head (status line, fields, empty line).
    package static func parse(_ bytes: ByteBuffer) throws(ProxyError) -> ResponseHead {
        var fields: [HeadField] = []
        return try Self.parse(bytes, fields: &fields)
    }

    /// Parses a complete head into `fields`, an empty array (``FieldStorage``), which the head
    /// then holds: `fields` is left empty, so the array has one owner and no copy is made.
    static func parse(_ bytes: ByteBuffer, fields: inout [HeadField]) throws(ProxyError) -> ResponseHead {
        try bytes.withUnsafeReadableBytes { raw throws(ProxyError) in
            var lines = HeadLines(raw, from: .upstream)
            guard let statusLine = try lines.next() else { throw .badResponse("an empty status line") }
            var head = try Self.parseStatusLine(raw, statusLine, bytes: bytes)
            swap(&head.fields, &fields)
            // One allocation for the usual response, not one per doubling (none when reused).
            head.fields.reserveCapacity(16)
            var connection = ConnectionOptions()
            var sawTransferEncoding = false
            while let line = try lines.next() {
                let field = try HeadField.parse(raw, line, from: .upstream)
                head.fields.append(field)
                switch field.name.count {
                case 14 where HeaderName.equals(raw, field.name, "content-length"):
                    let length = try Self.parseContentLength(raw, field.value)
                    if let previous = head.contentLength, previous != length {
                        throw .badResponse("Content-Length values that disagree")
                    }
                    head.contentLength = length
                case 17 where HeaderName.equals(raw, field.name, "transfer-encoding"):
                    // Only `chunked`, once: other transfer codings are not forwarded (RFC 9112 §6.1).
                    if sawTransferEncoding || !HeaderName.equals(raw, field.value, "chunked") {
                        throw .badResponse("a transfer coding other than a single chunked")
                    }
                    sawTransferEncoding = true
                    head.isChunked = true
                case 10 where HeaderName.equals(raw, field.name, "connection"):
                    connection.scan(raw, field.value)
                default:
                    break
                }
            }
            if head.isChunked && head.contentLength != nil {
                // RFC 9112 §6.3: a sign of response splitting; never guess which one is right.
                throw .badResponse("both Transfer-Encoding and Content-Length")
            }
            head.keepAlive = connection.keepsAlive(minor: head.minorVersion)
            head.connectionOptions = connection.others
            return head
        }
    }

    /// `HTTP/1.x SP 3DIGIT [SP reason-phrase]`.
    private static func parseStatusLine(
        _ raw: UnsafeRawBufferPointer,
        _ line: Range<Int>,
        bytes: ByteBuffer
    ) throws(ProxyError) -> ResponseHead {
        let prefix: StaticString = "HTTP/1."
        guard line.count >= 12, HeaderName.hasPrefix(raw, line, prefix) else {
            throw .badResponse("a status line that is not HTTP/1.x")
        }
        let minor = raw[line.lowerBound + 7]
        guard minor == UInt8(ascii: "0") || minor == UInt8(ascii: "1"), raw[line.lowerBound + 8] == UInt8(ascii: " ")
        else { throw .badResponse("a status line that is not HTTP/1.0 or HTTP/1.1") }
        var status = 0
        for index in (line.lowerBound + 9)..<(line.lowerBound + 12) {
            let byte = raw[index]
            guard byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9") else {
                throw .badResponse("a status code that is not three digits")
            }
            status = status * 10 + Int(byte - UInt8(ascii: "0"))
        }
        guard status >= 100 else { throw .badResponse("a status code below 100") }
        var reasonStart = line.lowerBound + 12
        if reasonStart < line.upperBound {
            guard raw[reasonStart] == UInt8(ascii: " ") else {
                throw .badResponse("a status code that is not three digits")
            }
            reasonStart += 1
        }
        for index in reasonStart..<line.upperBound where !HeaderName.isFieldValueByte(raw[index]) {
            throw .badResponse("a control character in the reason phrase")
        }
        return ResponseHead(
            bytes: bytes,
            minorVersion: minor == UInt8(ascii: "1") ? 1 : 0,
            status: status,
            reason: reasonStart..<line.upperBound
        )
    }

    /// `1*DIGIT`, or a list of the same value repeated (RFC 9110 §8.6).
    private static func parseContentLength(
        _ raw: UnsafeRawBufferPointer,
        _ value: Range<Int>
    )
        throws(ProxyError) -> Int
    {
        var result: Int?
        var failed = false
        HeaderName.forEachListElement(raw, value) { element in
            var length = 0
            guard !element.isEmpty, element.count <= 18 else {
                failed = true
                return
            }
            for index in element {
                let byte = raw[index]
                guard byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9") else {
                    failed = true
                    return
                }
                length = length * 10 + Int(byte - UInt8(ascii: "0"))
            }
            if let result, result != length { failed = true }
            result = length
        }
        guard !failed, let result else { throw .badResponse("a Content-Length that is not one number") }
        return result
    }
}
