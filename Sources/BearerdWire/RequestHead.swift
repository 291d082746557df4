import NIOCore

/// A client's request head as bearerd parsed it (RFC 9112 §3, §5): the head's own bytes and
/// where each field lies in them, so that checking and forwarding a field reads bytes and
/// allocates nothing. The parse is strict, like the response side's (``ResponseHead``): CRLF line
/// ends, token methods and names, no obs-fold, no whitespace before a colon, one framing.
package struct RequestHead {
    package typealias Field = HeadField

    /// The head from the request line to the empty line; its reader index is 0.
    package var bytes: ByteBuffer
    package var method: RequestMethod
    package var version: WireVersion
    /// The request target, as sent.
    package var target: Range<Int>
    package var fields: [Field] = []
    /// The one Content-Length value (a repeat is an error).
    package var contentLength: Int?
    /// `Transfer-Encoding: chunked`, the only coding taken.
    package var isChunked = false
    /// Whether the client keeps the connection open after this request (RFC 9112 §9.3).
    package var keepAlive = true
    /// `Connection` lists `upgrade` and an `Upgrade` field is present: as llhttp, nothing after
    /// this request is parsed as HTTP.
    package var isUpgrade = false
    /// Names the `Connection` header lists besides `close` and `keep-alive`: hop-by-hop too.
    package var connectionOptions: [Range<Int>] = []

    /// The request target as a string (for the canonical form and the access log).
    package var uri: String {
        self.bytes.getString(at: self.target.lowerBound, length: self.target.count) ?? ""
    }

    /// Whether a field called `name` (lowercase) is present.
    package func contains(_ name: StaticString) -> Bool {
        Self.contains(name, in: self.fields, of: self.bytes)
    }

    /// The search, given the head's parts: a closure that captured the whole head would copy it.
    private static func contains(_ name: StaticString, in fields: [Field], of bytes: ByteBuffer) -> Bool {
        bytes.withUnsafeReadableBytes { raw in
            fields.contains { HeaderName.equals(raw, $0.name, name) }
        }
    }

    /// The values of every field called `name` (lowercase), as text, in order.
    package func values(of name: StaticString) -> [String] {
        Self.values(of: name, in: self.fields, of: self.bytes)
    }

    private static func values(of name: StaticString, in fields: [Field], of bytes: ByteBuffer) -> [String] {
        bytes.withUnsafeReadableBytes { raw in
            fields.filter { HeaderName.equals(raw, $0.name, name) }.map {
                String(decoding: UnsafeRawBufferPointer(rebasing: raw[$0.value]), as: UTF8.self)
            }
        }
    }

    /// Every field as `name:value`, the name lowercased (for tests and the differential fuzzer).
    package var fieldList: [String] {
        self.bytes.withUnsafeReadableBytes { raw in
            self.fields.map { field in
                String(decoding: UnsafeRawBufferPointer(rebasing: raw[field.name]), as: UTF8.self).lowercased() + ":"
                    + String(decoding: UnsafeRawBufferPointer(rebasing: raw[field.value]), as: UTF8.self)
            }
        }
    }

    /// Whether the client said a body follows the head.
    package var hasBody: Bool { self.isChunked || (self.contentLength ?? 0) > 0 }

    /// The head of a request bearerd answers before it could parse one.
    package static var placeholder: RequestHead {
        RequestHead(
            bytes: ByteBuffer(staticString: "GET - HTTP/1.1\r\n\r\n"),
            method: .GET,
            version: .http1_1,
            target: 4..<5
        )
    }

    /// Parses a complete head: the request line, the fields and the empty line, CRLF each.
    package static func parse(_ bytes: ByteBuffer, limits: RequestLimits) throws(ProxyError) -> RequestHead {
        var fields: [HeadField] = []
        return try Self.parse(bytes, limits: limits, fields: &fields)
    }

    /// Parses a complete head into `fields`, an empty array (``FieldStorage``), which the head
    /// then holds: `fields` is left empty, so the array has one owner and no copy is made.
    static func parse(
        _ bytes: ByteBuffer,
        limits: RequestLimits,
        fields: inout [HeadField]
    ) throws(ProxyError) -> RequestHead {
        try bytes.withUnsafeReadableBytes { raw throws(ProxyError) in
            var lines = HeadLines(raw, from: .client)
            guard let requestLine = try lines.next() else { throw .badRequest("an empty request line") }
            var head = try Self.parseRequestLine(raw, requestLine, bytes: bytes)
            swap(&head.fields, &fields)
            // One allocation for the usual request, not one per doubling (none when reused).
            head.fields.reserveCapacity(16)
            var connection = ConnectionOptions()
            // The name and value bytes of every field, held to `proxy.max_header_size`.
            var fieldBytes = 0
            var sawUpgrade = false
            var sawTransferEncoding = false
            while let line = try lines.next() {
                let field = try HeadField.parse(raw, line, from: .client)
                head.fields.append(field)
                fieldBytes += field.name.count + field.value.count
                guard head.fields.count <= limits.maxHeaderCount else { throw .tooManyFields }
                guard fieldBytes <= limits.maxHeaderSize else { throw .fieldsTooLarge }
                switch field.name.count {
                case 14 where HeaderName.equals(raw, field.name, "content-length"):
                    guard !field.tabAround else { throw .badRequest("a tab around a framing value") }
                    // llhttp refuses a repeat too, even of the same value.
                    guard head.contentLength == nil else { throw .badRequest("more than one Content-Length") }
                    head.contentLength = try Self.parseContentLength(raw, field.value)
                case 17 where HeaderName.equals(raw, field.name, "transfer-encoding"):
                    guard !field.tabAround else { throw .badRequest("a tab around a framing value") }
                    guard !sawTransferEncoding, HeaderName.equals(raw, field.value, "chunked") else {
                        throw .unsupportedCoding("a transfer coding other than a single chunked")
                    }
                    sawTransferEncoding = true
                    head.isChunked = true
                case 10 where HeaderName.equals(raw, field.name, "connection"):
                    connection.scan(raw, field.value)
                case 7 where HeaderName.equals(raw, field.name, "upgrade"):
                    sawUpgrade = true
                default:
                    break
                }
            }
            if head.isChunked && head.contentLength != nil {
                // RFC 9112 §6.3: request smuggling's classic; never guess which one is right.
                throw .badRequest("both Transfer-Encoding and Content-Length")
            }
            if head.isChunked && head.version.minor == 0 {
                // RFC 9112 §6.1: an HTTP/1.0 message with Transfer-Encoding has faulty framing.
                throw .badRequest("Transfer-Encoding in an HTTP/1.0 request")
            }
            head.keepAlive = connection.keepsAlive(minor: head.version.minor)
            head.connectionOptions = connection.others
            // As llhttp: after CONNECT, too, nothing more is HTTP (bearerd refuses it anyway).
            head.isUpgrade = (sawUpgrade && connection.upgrade) || head.method == .CONNECT
            return head
        }
    }

    /// `method SP request-target SP HTTP/1.x`.
    private static func parseRequestLine(
        _ raw: UnsafeRawBufferPointer,
        _ line: Range<Int>,
        bytes: ByteBuffer
    ) throws(ProxyError) -> RequestHead {
        var index = line.lowerBound
        while index < line.upperBound && HeaderName.isTokenByte(raw[index]) { index += 1 }
        let method = line.lowerBound..<index
        guard !method.isEmpty, index < line.upperBound, raw[index] == UInt8(ascii: " ") else {
            throw .badRequest("a method that is not a token")
        }
        index += 1
        if HeaderName.hasPrefix(raw, method, "CONNECT") && method.count == 7 { throw .connect }
        // Origin-form only: an absolute-form or authority-form target could steer the token to
        // another host, and `*` has nothing to forward.
        guard index < line.upperBound, raw[index] == UInt8(ascii: "/") else { throw .notOriginForm }
        let targetStart = index
        // Visible ASCII only: no spaces, controls or bytes over 0x7E (llhttp's strict URL set).
        while index < line.upperBound && raw[index] > 0x20 && raw[index] < 0x7F { index += 1 }
        let target = targetStart..<index
        let version = index + 1
        guard !target.isEmpty, index < line.upperBound, raw[index] == UInt8(ascii: " "),
            line.upperBound - version == 8, HeaderName.hasPrefix(raw, version..<line.upperBound, "HTTP/1.")
        else { throw .badRequest("a request line that is not `method target HTTP/1.x`") }
        let minor = raw[version + 7]
        guard minor == UInt8(ascii: "0") || minor == UInt8(ascii: "1") else {
            throw .badRequest("an HTTP version other than 1.0 and 1.1")
        }
        // llhttp knows a fixed list of methods (HTTPMethod's); bearerd forwards no other.
        guard let known = Self.method(raw, method) else {
            throw .badRequest("a method that is not a known HTTP method")
        }
        return RequestHead(
            bytes: bytes,
            method: known,
            version: minor == UInt8(ascii: "1") ? .http1_1 : .http1_0,
            target: target
        )
    }

    /// The method, without a string for the common ones; `nil` for one llhttp does not know.
    private static func method(_ raw: UnsafeRawBufferPointer, _ range: Range<Int>) -> RequestMethod? {
        switch range.count {
        case 3 where HeaderName.hasPrefix(raw, range, "GET"): return .GET
        case 3 where HeaderName.hasPrefix(raw, range, "PUT"): return .PUT
        case 4 where HeaderName.hasPrefix(raw, range, "POST"): return .POST
        case 4 where HeaderName.hasPrefix(raw, range, "HEAD"): return .HEAD
        case 5 where HeaderName.hasPrefix(raw, range, "PATCH"): return .PATCH
        case 6 where HeaderName.hasPrefix(raw, range, "DELETE"): return .DELETE
        case 7 where HeaderName.hasPrefix(raw, range, "OPTIONS"): return .OPTIONS
        default:
            return RequestMethod(known: String(decoding: UnsafeRawBufferPointer(rebasing: raw[range]), as: UTF8.self))
        }
    }

    /// `1*DIGIT`, at most 18 of them.
    private static func parseContentLength(
        _ raw: UnsafeRawBufferPointer,
        _ value: Range<Int>
    ) throws(ProxyError) -> Int {
        guard !value.isEmpty, value.count <= 18 else { throw .badRequest("a Content-Length that is not one number") }
        var length = 0
        for index in value {
            let byte = raw[index]
            guard byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9") else {
                throw .badRequest("a Content-Length that is not one number")
            }
            length = length * 10 + Int(byte - UInt8(ascii: "0"))
        }
        return length
    }
}
