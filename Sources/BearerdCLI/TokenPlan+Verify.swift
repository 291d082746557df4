import BearerdConfig
import BearerdJOSE
import BearerdTokens
import Foundation

extension TokenPlan {
    /// `auth.verify`: the checker of every access token, its secret read now.
    static func verifier(
        _ verify: BearerdConfiguration.Auth.Verify,
        source: any TokenSource
    ) throws -> JWTTokenVerifier {
        let keys: JWTTokenVerifier.Keys
        let clock = SystemTokenClock()
        switch verify.keys {
        case .jwks(let url):
            keys = .jwks(JWKSCache(.url(url), clock: clock))
        case .discovered:
            guard let oauth2 = source as? OAuth2Source else {
                throw CommandError(key: "auth.verify.jwks_uri", "discover needs auth.issuer")
            }
            keys = .jwks(JWKSCache(.discovered { try await oauth2.discoveredJWKSURI(transport: $0) }, clock: clock))
        case .secret(let path):
            let secret = try Self.readSecret(path, key: "auth.verify.secret_file", what: "HS256 secret")
            // RFC 7518 §3.2: an HS256 key of fewer than 256 bits is too weak to rely on.
            guard secret.value.utf8.count >= 32 else {
                throw CommandError(
                    key: "auth.verify.secret_file",
                    "\(path) holds fewer than 32 bytes; an HS256 secret needs at least 32 (RFC 7518 §3.2)"
                )
            }
            keys = .secret(secret)
        }
        return JWTTokenVerifier(
            keys: keys,
            expectations: .init(issuer: verify.issuer, audience: verify.audience),
            clock: clock
        )
    }
}
