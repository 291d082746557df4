import BearerdAuth
import BearerdConfig
import Logging
import NIOCore
import NIOHTTP1

/// An answer bearerd makes itself, as JSON `{"error": "…", "message": "…"}`.
struct ProxyFailure: Error, Sendable {
    var status: HTTPResponseStatus
    /// Short machine-readable name.
    var error: String
    /// What happened and what to do next. Never holds a token or secret.
    var message: String
    var retryAfterSeconds: Int?

    static func badRequest(_ message: String) -> Self {
        Self(status: .badRequest, error: "bad_request", message: message)
    }

    static let headersTooLarge = Self(
        status: .requestHeaderFieldsTooLarge,
        error: "headers_too_large",
        message: "the request headers are larger than proxy.max_header_size allows"
    )

    static func bodyTooLarge(limit: Int) -> Self {
        Self(
            status: .payloadTooLarge,
            error: "body_too_large",
            message: "the request body is larger than proxy.max_request_body (\(limit) bytes)"
        )
    }

    static func upstreamUnreachable(_ upstream: String, reason: String) -> Self {
        Self(
            status: .badGateway,
            error: "upstream_unreachable",
            message: "cannot reach the upstream \(upstream): \(reason)"
        )
    }

    static func upstreamFailed(_ upstream: String, reason: String) -> Self {
        Self(
            status: .badGateway,
            error: "upstream_failed",
            message: "the upstream \(upstream) closed the connection or sent an invalid response: \(reason)"
        )
    }

    static func upstreamTimeout(_ upstream: String, what: String) -> Self {
        Self(status: .gatewayTimeout, error: "upstream_timeout", message: "the upstream \(upstream) \(what)")
    }

    static func expectationFailed(_ value: String) -> Self {
        Self(
            status: .expectationFailed,
            error: "expectation_failed",
            message: "only \"Expect: 100-continue\" is supported (got \"\(value)\")"
        )
    }

    /// The response head and body for a client speaking `version`.
    func response(version: HTTPVersion, close: Bool, allocator: ByteBufferAllocator) -> (HTTPResponseHead, ByteBuffer) {
        var body = allocator.buffer(capacity: 64 + self.message.utf8.count)
        body.writeStaticString("{\"error\":")
        JSONString.write(self.error, to: &body)
        body.writeStaticString(",\"message\":")
        JSONString.write(self.message, to: &body)
        body.writeStaticString("}\n")
        var headers = HTTPHeaders()
        headers.add(name: "content-type", value: "application/json")
        headers.add(name: "content-length", value: String(body.readableBytes))
        headers.add(name: "cache-control", value: "no-store")
        if let retryAfterSeconds { headers.add(name: "retry-after", value: String(retryAfterSeconds)) }
        if close {
            headers.add(name: "connection", value: "close")
        } else if version.minor == 0 {
            headers.add(name: "connection", value: "keep-alive")
        }
        return (HTTPResponseHead(version: version, status: self.status, headers: headers), body)
    }
}

/// Writes a JSON string literal with the escapes RFC 8259 requires.
enum JSONString {
    static func write(_ text: String, to buffer: inout ByteBuffer) {
        buffer.writeInteger(UInt8(ascii: "\""))
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "\""): buffer.writeStaticString("\\\"")
            case UInt8(ascii: "\\"): buffer.writeStaticString("\\\\")
            case UInt8(ascii: "\n"): buffer.writeStaticString("\\n")
            case UInt8(ascii: "\r"): buffer.writeStaticString("\\r")
            case UInt8(ascii: "\t"): buffer.writeStaticString("\\t")
            case 0..<0x20:
                buffer.writeStaticString("\\u00")
                let hex: [UInt8] = Array("0123456789abcdef".utf8)
                buffer.writeInteger(hex[Int(byte >> 4)])
                buffer.writeInteger(hex[Int(byte & 0xF)])
            default: buffer.writeInteger(byte)
            }
        }
        buffer.writeInteger(UInt8(ascii: "\""))
    }
}
