import BearerdAuth

/// Signs the client assertions of `auth.client_auth: private_key_jwt` (RFC 7523 §2.2, OpenID
/// Connect Core §9): one fresh JWT per token request, so the token server can refuse a replay.
/// BearerdJOSE implements it; the engine only asks for assertions through this seam.
package protocol ClientAssertionSigner: Sendable {
    /// A signed assertion with `iss` = `sub` = `clientID`, `aud` = `audience`, a unique `jti` and
    /// an `exp` within a minute.
    func assertion(clientID: String, audience: String) async throws -> Secret
}

/// What a client assertion names as its audience (`auth.client_assertion_audience`).
package enum ClientAssertionAudience: Sendable, Equatable {
    /// The URL the request is sent to: the token endpoint for every grant (OpenID Connect Core
    /// §9), the revocation or device endpoint for those requests.
    case endpoint
    /// The issuer's identifier (`auth.issuer`).
    case issuer
    /// A fixed value, as some servers ask.
    case fixed(String)
}
