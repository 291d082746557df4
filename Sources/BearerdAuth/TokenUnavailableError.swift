/// No token can be had right now. Its message tells the user what to do; it never holds a token.
package struct TokenUnavailableError: Error, Sendable, Hashable, CustomStringConvertible {
    /// Which failure it is, for code to compare (`error.code == .notLoggedIn`). A struct over a
    /// private enum, as swift-service-lifecycle's `ServiceGroupError.Code`: a new kind is not a
    /// breaking change for an exhaustive `switch` elsewhere.
    package struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Kind: Hashable, Sendable {
            case notLoggedIn
            case tokenServerUnavailable
            case tokenSourceFailed
        }

        private let kind: Kind

        /// There is no session: someone has to log in.
        package static let notLoggedIn = Code(kind: .notLoggedIn)
        /// The token server cannot be reached or fails; retrying later may succeed.
        package static let tokenServerUnavailable = Code(kind: .tokenServerUnavailable)
        /// The configured token source cannot give a token.
        package static let tokenSourceFailed = Code(kind: .tokenSourceFailed)

        /// The short machine-readable name: the `error` field of the proxy's and the admin
        /// socket's JSON answers.
        package var description: String {
            switch self.kind {
            case .notLoggedIn: "not_logged_in"
            case .tokenServerUnavailable: "token_server_unavailable"
            case .tokenSourceFailed: "token_unavailable"
            }
        }
    }

    /// Which failure it is.
    package let code: Code
    /// What happened and what to do next, fit for a user.
    package let message: String
    /// Seconds after which a retry may succeed, sent to clients as `Retry-After`.
    package let retryAfterSeconds: Int?

    /// A short machine-readable name, used as the `error` field of the proxy's JSON answers.
    package var errorName: String { self.code.description }

    /// There is no user session: someone has to log in.
    package static func notLoggedIn(_ message: String = "no token: run `bearerd login`") -> Self {
        Self(code: .notLoggedIn, message: message, retryAfterSeconds: nil)
    }

    /// The token server cannot be reached or fails; retrying later may succeed.
    package static func tokenServerUnavailable(_ message: String, retryAfterSeconds: Int?) -> Self {
        Self(code: .tokenServerUnavailable, message: message, retryAfterSeconds: retryAfterSeconds)
    }

    /// The configured token source cannot give a token (for example an unreadable token file).
    package static func tokenSourceFailed(_ message: String) -> Self {
        Self(code: .tokenSourceFailed, message: message, retryAfterSeconds: nil)
    }

    /// The same failure, its message reworded (for example to name the session it is of).
    package func rewording(_ transform: (String) -> String) -> Self {
        Self(code: self.code, message: transform(self.message), retryAfterSeconds: self.retryAfterSeconds)
    }

    package var description: String { self.message }
}
