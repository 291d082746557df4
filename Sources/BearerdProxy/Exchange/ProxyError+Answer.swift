import BearerdWire

extension ProxyError {
    /// The answer bearerd gives a client whose request this error refuses.
    func failure(limits: RequestLimits) -> ProxyFailure {
        switch self.code {
        case .unsupportedCoding:
            .badRequest("only the chunked transfer coding is supported in requests")
        case .connect: RequestPolicy.connectRefused
        case .notOriginForm: RequestPolicy.notOriginForm
        case .targetTooLong: .targetTooLong(limit: limits.maxRequestLine)
        case .tooManyFields: .tooManyHeaders(limit: limits.maxHeaderCount)
        case .fieldsTooLarge: .headersTooLarge
        case .headTooLarge: .headTooLarge
        default: .badRequest("the request is not valid HTTP/1.1: it has \(self.what)")
        }
    }
}
