/// The token engine's one error: a login or logout that did not happen, a token source that
/// cannot build its request or reach its server, a token request with no HTTP answer, a token endpoint's 2xx body that does not hold what it should, or
/// an access token that fails `auth.verify`. Its message says what happened and what to do next;
/// it never holds a token, a refresh token, a password, a code or a key.
package struct TokenEngineError: Error, Sendable, Equatable, CustomStringConvertible {
    /// Which kind it is, for code to compare (`error.code == .source`). A struct over a private
    /// enum, as swift-service-lifecycle's `ServiceGroupError.Code`.
    package struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Kind: Hashable, Sendable {
            case login, source, unreachable, transport, body, verification
        }

        private let kind: Kind

        /// A login or logout did not happen.
        package static let login = Code(kind: .login)
        /// The token source cannot build its request for a reason of the configuration (for
        /// example, every metadata document of `auth.issuer` answered 404): asking again will not
        /// help, and a login or `serve` says what to fix.
        package static let source = Code(kind: .source)
        /// The token server could not even be asked (discovery got no metadata document, and at
        /// least one did not answer or answered 5xx, 408 or 429): not a configuration error,
        /// retried as any unreachable server is.
        package static let unreachable = Code(kind: .unreachable)
        /// A token request got no HTTP answer: the connection failed, or no complete answer came
        /// within `auth.request_timeout`. Retried as any blip is; nothing is wiped.
        package static let transport = Code(kind: .transport)
        /// A 2xx body from the token endpoint does not hold what it should.
        package static let body = Code(kind: .body)
        /// An access token failed `auth.verify`.
        package static let verification = Code(kind: .verification)

        package var description: String {
            switch self.kind {
            case .login: "login"
            case .source: "source"
            case .unreachable: "unreachable"
            case .transport: "transport"
            case .body: "body"
            case .verification: "verification"
            }
        }
    }

    /// Which kind it is.
    package let code: Code
    /// What happened and what to do next, fit for a user.
    package let message: String
    /// The error this one reports, when it wraps one (a transport's connection error, a
    /// signer's failure), for code to inspect; its text is never shown beyond `message`.
    package let underlying: (any Error)?

    package var description: String { self.message }

    init(code: Code, message: String, underlying: (any Error)? = nil) {
        self.code = code
        self.message = message
        self.underlying = underlying
    }

    /// Two errors are the same when their code and message are; the cause is not compared.
    package static func == (lhs: Self, rhs: Self) -> Bool {
        lhs.code == rhs.code && lhs.message == rhs.message
    }

    /// A login or logout that did not happen.
    package static func login(_ message: String, underlying: (any Error)? = nil) -> Self {
        Self(code: .login, message: message, underlying: underlying)
    }
    /// A token source that cannot build its request.
    package static func source(_ message: String, underlying: (any Error)? = nil) -> Self {
        Self(code: .source, message: message, underlying: underlying)
    }
    /// A token server that could not be reached at all.
    package static func unreachable(_ message: String) -> Self { Self(code: .unreachable, message: message) }
    /// A token request that got no HTTP answer, said in words.
    package static func transport(_ message: String, underlying: (any Error)? = nil) -> Self {
        Self(code: .transport, message: message, underlying: underlying)
    }
    /// A token endpoint's 2xx body that does not hold what it should.
    package static func body(_ message: String) -> Self { Self(code: .body, message: message) }
    /// An access token that must not be used: names what failed (a claim, a key id, the
    /// signature), never the token.
    package static func verification(_ message: String) -> Self { Self(code: .verification, message: message) }
}
