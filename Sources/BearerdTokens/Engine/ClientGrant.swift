/// The grant a source uses to get a token without a user, when it has one.
package enum ClientGrant: String, Sendable, Equatable {
    /// OAuth 2.0 `client_credentials` (RFC 6749 §4.4).
    case clientCredentials = "client_credentials"
    /// An RFC 8693 token exchange of the platform's token.
    case tokenExchange = "token_exchange"
    /// `auth.command`: a program on the host prints the token.
    case command
}

/// Why an attempt at a token is made: in logs, spans and `status`.
enum RefreshReason: String, Sendable, Equatable {
    /// The timer: the token is near its end.
    case proactive
    /// A request found the token unusable.
    case expired
    /// The retry after a failure.
    case retry
    /// The upstream answered 401 to the current token.
    case upstream401 = "upstream_401"
    /// A client grant with no token yet.
    case clientToken = "client_token"
    /// The platform renewed the file a refused client grant sends.
    case platformTokenRenewed = "platform_token_renewed"
    /// A person logged in.
    case login
    /// The API asked for more scope (`auth.scope_step_up`).
    case scopeStepUp = "scope_step_up"
}
