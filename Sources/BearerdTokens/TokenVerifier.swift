import BearerdAuth
import Foundation

/// Checks an access token before bearerd uses it (`auth.verify`): its signature against the
/// issuer's keys and its claims. A token that fails is never injected; the refresh that brought
/// it counts as failed, and `status` says why.
package protocol TokenVerifier: Sendable {
    /// Returns when `token` may be used; throws ``TokenEngineError`` saying why not.
    /// `transport` reaches the issuer (its JWKS).
    /// `serverTime`: the token server's clock when it issued the token (its `Date` header), which
    /// `exp` and `nbf` are judged against; `nil`: this machine's wall clock, which a step may have
    /// moved away from the server's.
    func verify(
        _ token: BearerToken,
        transport: any TokenTransport,
        at serverTime: Date?
    ) async throws(TokenEngineError)
}

extension TokenVerifier {
    /// ``verify(_:transport:at:)`` on this machine's wall clock.
    package func verify(_ token: BearerToken, transport: any TokenTransport) async throws(TokenEngineError) {
        try await self.verify(token, transport: transport, at: nil)
    }
}
