import BearerdAuth
import BearerdWire
import Logging
import NIOCore
import NIOHTTP1

/// An answer bearerd makes itself, as JSON `{"error": "…", "message": "…"}`: a value to
/// send, not an error to throw (BearerdProxy's one error is ``ProxyError``).
struct ProxyFailure: Sendable {
    var status: HTTPResponseStatus
    /// Short machine-readable name.
    var error: String
    /// What happened and what to do next. Never holds a token or secret.
    var message: String
    var retryAfterSeconds: Int?

    static func badRequest(_ message: String) -> Self {
        Self(status: .badRequest, error: "bad_request", message: message)
    }

    static func forbidden(_ message: String) -> Self {
        Self(status: .forbidden, error: "forbidden", message: message)
    }

    static func methodNotAllowed(_ method: String) -> Self {
        Self(
            status: .methodNotAllowed,
            error: "method_not_allowed",
            message: "\(method) is refused: it echoes the request, and with it the token bearerd adds"
        )
    }

    /// The token is being refreshed and did not come within `proxy.token_wait`.
    static func tokenWaitExceeded(_ wait: TimeAmount) -> Self {
        Self(
            status: .serviceUnavailable,
            error: "token_server_unavailable",
            message:
                "the token is being refreshed and did not come within proxy.token_wait (\(wait.prettyPrint)); retry after the time Retry-After gives"
        )
    }

    /// A reload came before the request was forwarded: it is not sent under the old settings.
    static let reloaded = Self(
        status: .serviceUnavailable,
        error: "reloaded",
        message: "bearerd's configuration was reloaded before this request was forwarded; send it again",
        retryAfterSeconds: 0
    )

    static let headersTooLarge = Self(
        status: .requestHeaderFieldsTooLarge,
        error: "headers_too_large",
        message: "the request headers are larger than proxy.max_header_size allows"
    )

    /// The decoder's own limit: the request line and headers together.
    static let headTooLarge = Self(
        status: .requestHeaderFieldsTooLarge,
        error: "headers_too_large",
        message: "the request line or headers are larger than proxy.max_request_line and proxy.max_header_size allow"
    )

    static func tooManyHeaders(limit: Int) -> Self {
        Self(
            status: .requestHeaderFieldsTooLarge,
            error: "too_many_headers",
            message: "the request has more than proxy.max_header_count (\(limit)) header fields"
        )
    }

    static func targetTooLong(limit: Int) -> Self {
        Self(
            status: .uriTooLong,
            error: "target_too_long",
            message: "the request target is longer than proxy.max_request_line (\(limit) bytes)"
        )
    }

    /// A slow client: `what` says which part of the request did not arrive in time.
    static func requestTimeout(_ what: String) -> Self {
        Self(status: .requestTimeout, error: "request_timeout", message: what)
    }

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
    func response(version: WireVersion, close: Bool, allocator: ByteBufferAllocator) -> (HTTPResponseHead, ByteBuffer) {
        var body = allocator.buffer(capacity: 64 + self.message.utf8.count)
        body.writeStaticString("{\"error\":\"")
        body.writeString(JSONEscaping.escaped(self.error))
        body.writeStaticString("\",\"message\":\"")
        body.writeString(JSONEscaping.escaped(self.message))
        body.writeStaticString("\"}\n")
        var headers = HTTPHeaders()
        headers.add(name: "content-type", value: "application/json")
        headers.add(name: "content-length", value: String(body.readableBytes))
        headers.add(name: "cache-control", value: "no-store")
        if let retryAfterSeconds {
            headers.add(name: "retry-after", value: String(retryAfterSeconds))
        } else if self.status == .serviceUnavailable {
            // Every 503 says when to come back.
            headers.add(name: "retry-after", value: "1")
        }
        if close {
            headers.add(name: "connection", value: "close")
        } else if version.minor == 0 {
            headers.add(name: "connection", value: "keep-alive")
        }
        let nioVersion = HTTPVersion(major: version.major, minor: version.minor)
        return (HTTPResponseHead(version: nioVersion, status: self.status, headers: headers), body)
    }
}
