import BearerdAuth

/// Checks an access token before bearerd uses it (`auth.verify`): its signature against the
/// issuer's keys and its claims. A token that fails is never injected; the refresh that brought
/// it counts as failed, and `status` says why.
package protocol TokenVerifier: Sendable {
    /// Returns when `token` may be used; throws ``TokenVerificationError`` saying why not.
    /// `transport` reaches the issuer (its JWKS).
    func verify(_ token: BearerToken, transport: any TokenTransport) async throws(TokenVerificationError)
}

/// Why an access token must not be used. The message names what failed (a claim, a key id, the
/// signature), never the token.
package struct TokenVerificationError: Error, Sendable, CustomStringConvertible {
    package let description: String

    package init(_ description: String) {
        self.description = description
    }
}
