/// A client's request that bearerd cannot parse, or that is over a limit: answered with the
/// matching error (400, 414 or 431), after which the connection closes.
package enum RequestHeadError: Error, Equatable, CustomStringConvertible {
    /// Not HTTP/1.1 as RFC 9112 writes it; `chunked`: the fault is a transfer coding.
    case malformed(String, chunked: Bool = false)
    /// `CONNECT`, which bearerd never forwards.
    case connect
    /// A request target that is not origin-form (`/path?query`).
    case notOriginForm
    /// The request line is longer than `proxy.max_request_line` allows.
    case targetTooLong
    /// More fields than `proxy.max_header_count`.
    case tooManyFields
    /// Field names and values over `proxy.max_header_size`.
    case fieldsTooLarge
    /// The whole head over what the limits together allow.
    case headTooLarge

    package var description: String {
        switch self {
        case .malformed(let what, _): "a request with \(what)"
        case .connect: "a CONNECT request"
        case .notOriginForm: "a request target that is not origin-form"
        case .targetTooLong: "a request line over proxy.max_request_line"
        case .tooManyFields: "more header fields than proxy.max_header_count"
        case .fieldsTooLarge: "headers over proxy.max_header_size"
        case .headTooLarge: "a request head over the limits"
        }
    }

    /// The answer bearerd gives.
    func failure(limits: RequestLimits) -> ProxyFailure {
        switch self {
        case .malformed(_, chunked: true):
            .badRequest("only the chunked transfer coding is supported in requests")
        case .malformed(let what, chunked: false):
            .badRequest("the request is not valid HTTP/1.1: it has \(what)")
        case .connect: RequestPolicy.connectRefused
        case .notOriginForm: RequestPolicy.notOriginForm
        case .targetTooLong: .targetTooLong(limit: limits.maxRequestLine)
        case .tooManyFields: .tooManyHeaders(limit: limits.maxHeaderCount)
        case .fieldsTooLarge: .headersTooLarge
        case .headTooLarge: .headTooLarge
        }
    }
}
