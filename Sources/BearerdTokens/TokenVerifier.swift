import BearerdAuth

/// Checks an access token before bearerd uses it (`auth.verify`): its signature against the
/// issuer's keys and its claims. A token that fails is never injected; the refresh that brought
/// it counts as failed, and `status` says why.
package protocol TokenVerifier: Sendable {
    /// Returns when `token` may be used; throws ``TokenEngineError`` saying why not.
    /// `transport` reaches the issuer (its JWKS).
    func verify(_ token: BearerToken, transport: any TokenTransport) async throws(TokenEngineError)
}
