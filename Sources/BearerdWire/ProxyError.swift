/// The data path's one error, BearerdWire's and BearerdProxy's: the proxy cannot start (or take
/// a reload), or bytes a client or the upstream sent are not HTTP/1.1 as RFC 9112 writes it, or
/// are over a limit. A client's fault is answered with 400, 414 or 431 (BearerdProxy's
/// `failure(limits:)`) and the connection closes; the upstream's with 502. The message names the
/// config key at fault when there is one, says what to change, and never holds a token or a
/// key's bytes.
package struct ProxyError: Error, Sendable, Equatable, CustomStringConvertible {
    /// Which failure it is, for code to compare (`error.code == .badResponse`). A struct over a
    /// private enum, as swift-service-lifecycle's `ServiceGroupError.Code`.
    package struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Kind: UInt8, Hashable, Sendable {
            case setup, badRequest, unsupportedCoding, connect, notOriginForm, targetTooLong, tooManyFields,
                fieldsTooLarge, headTooLarge, badResponse
        }

        private let kind: Kind

        /// The proxy cannot start or take a reload: a certificate, a key, TLS, a listener.
        package static let setup = Code(kind: .setup)
        /// A client's request that is not HTTP/1.1 as RFC 9112 writes it.
        package static let badRequest = Code(kind: .badRequest)
        /// A request body in a transfer coding other than chunked.
        package static let unsupportedCoding = Code(kind: .unsupportedCoding)
        /// `CONNECT`, which bearerd never forwards.
        package static let connect = Code(kind: .connect)
        /// A request target that is not origin-form (`/path?query`).
        package static let notOriginForm = Code(kind: .notOriginForm)
        /// The request line is longer than `proxy.max_request_line` allows.
        package static let targetTooLong = Code(kind: .targetTooLong)
        /// More fields than `proxy.max_header_count`.
        package static let tooManyFields = Code(kind: .tooManyFields)
        /// Field names and values over `proxy.max_header_size`.
        package static let fieldsTooLarge = Code(kind: .fieldsTooLarge)
        /// The whole head over what the limits together allow.
        package static let headTooLarge = Code(kind: .headTooLarge)
        /// The upstream's response is not HTTP/1.1 as RFC 9112 writes it.
        package static let badResponse = Code(kind: .badResponse)

        package var description: String {
            switch self.kind {
            case .setup: "setup"
            case .badRequest: "bad_request"
            case .unsupportedCoding: "unsupported_coding"
            case .connect: "connect"
            case .notOriginForm: "not_origin_form"
            case .targetTooLong: "target_too_long"
            case .tooManyFields: "too_many_fields"
            case .fieldsTooLarge: "fields_too_large"
            case .headTooLarge: "head_too_large"
            case .badResponse: "bad_response"
            }
        }
    }

    /// Which failure it is.
    package let code: Code
    /// For a syntax fault, what the message has that it must not ("a tab around a framing
    /// value"); for ``Code/setup``, the whole message, from the config key at fault; else empty.
    package let what: String
    /// The error this one reports, when it wraps one (NIOSSL's, a file's), for code to
    /// inspect; its text is never shown beyond ``what``.
    package let underlying: (any Error)?

    private init(_ code: Code, _ what: String = "", underlying: (any Error)? = nil) {
        self.code = code
        self.what = what
        self.underlying = underlying
    }

    /// Two errors are the same when their code and text are; the cause is not compared.
    package static func == (lhs: Self, rhs: Self) -> Bool {
        lhs.code == rhs.code && lhs.what == rhs.what
    }

    package var description: String {
        switch self.code {
        case .badRequest, .unsupportedCoding: "a request with \(self.what)"
        case .connect: "a CONNECT request"
        case .notOriginForm: "a request target that is not origin-form"
        case .targetTooLong: "a request line over proxy.max_request_line"
        case .tooManyFields: "more header fields than proxy.max_header_count"
        case .fieldsTooLarge: "headers over proxy.max_header_size"
        case .headTooLarge: "a request head over the limits"
        case .badResponse: "the upstream sent a response with \(self.what)"
        default: self.what
        }
    }

    /// The proxy cannot start: `message` starts with the config key at fault when there is one
    /// (`upstream.ca_file: …`) and says what to change.
    package static func setup(_ message: String, underlying: (any Error)? = nil) -> Self {
        Self(.setup, message, underlying: underlying)
    }
    /// A client's request with `what`, which RFC 9112 does not allow.
    package static func badRequest(_ what: String) -> Self { Self(.badRequest, what) }
    /// A request body in a transfer coding other than chunked.
    package static func unsupportedCoding(_ what: String) -> Self { Self(.unsupportedCoding, what) }
    /// The upstream's response with `what`, which RFC 9112 does not allow.
    package static func badResponse(_ what: String) -> Self { Self(.badResponse, what) }
    package static let connect = Self(.connect)
    package static let notOriginForm = Self(.notOriginForm)
    package static let targetTooLong = Self(.targetTooLong)
    package static let tooManyFields = Self(.tooManyFields)
    package static let fieldsTooLarge = Self(.fieldsTooLarge)
    package static let headTooLarge = Self(.headTooLarge)
}

/// Who sent the bytes a parser reads, which says how strict it is and whose fault a syntax
/// error is.
enum Sender {
    /// A client: every line ends with CRLF and trailers are fields, as llhttp demands; a fault
    /// is the client's (400).
    case client
    /// The upstream: a bare LF ends a line too (RFC 9112 §2.2), trailers are only bounded; a
    /// fault is the upstream's (502).
    case upstream

    var strict: Bool { self == .client }

    /// The error for `what` in bytes from this sender.
    func malformed(_ what: String) -> ProxyError {
        switch self {
        case .client: .badRequest(what)
        case .upstream: .badResponse(what)
        }
    }
}
