import BearerdAuth
import BearerdTokens
import Foundation
import JWTKit
import Synchronization

/// Signs `private_key_jwt` client assertions with jwt-kit: `iss` = `sub` = the client, the
/// audience the source asks for, a random `jti`, `iat` now and `exp` a minute later, and the
/// key's `kid` in the header when one is configured (`auth.client_key_id`).
///
/// `iat` and `exp` are whole seconds written as JSON integers: a NumericDate is "seconds" in
/// RFC 7519 §2, and servers that read it as an integer (glewlwyd among them) refuse
/// `1795706588.647921`; jwt-kit's default encoder writes a `Date` as a JSON double.
package final class JWTClientAssertionSigner: ClientAssertionSigner {
    /// How long an assertion is valid: one request's worth, well within a minute (RFC 7523 §3
    /// lets the server refuse a long-lived one).
    package static let lifetime: TimeInterval = 60

    private let keys = JWTKeyCollection(
        defaultJWTSerializer: DefaultJWTSerializer(jsonEncoder: JWTClientAssertionSigner.encoder)
    )
    private let key: ClientAssertionKey
    private let kid: JWKIdentifier?
    private let clock: any TokenClock
    private let added = Mutex(false)

    package init(key: ClientAssertionKey, keyID: String?, clock: any TokenClock = SystemTokenClock()) {
        self.key = key
        self.kid = keyID.map { JWKIdentifier(string: $0) }
        self.clock = clock
    }

    package func assertion(clientID: String, audience: String) async throws -> Secret {
        if !self.added.withLock({ $0 }) {
            await self.key.add(to: self.keys, kid: self.kid)
            self.added.withLock { $0 = true }
        }
        let now = Date(timeIntervalSince1970: self.clock.now.timeIntervalSince1970.rounded(.down))
        let claims = ClientAssertionClaims(
            iss: IssuerClaim(value: clientID),
            sub: SubjectClaim(value: clientID),
            aud: AudienceClaim(value: [audience]),
            jti: IDClaim(value: UUID().uuidString),
            iat: IssuedAtClaim(value: now),
            exp: ExpirationClaim(value: now.addingTimeInterval(Self.lifetime))
        )
        var header = JWTHeader()
        header.typ = "JWT"
        do {
            return Secret(try await self.keys.sign(claims, kid: self.kid, header: header))
        } catch {
            throw TokenEngineError.source(
                "cannot sign the client assertion with auth.client_key_file (\(error))",
                underlying: error
            )
        }
    }
}

extension JWTClientAssertionSigner {
    /// jwt-kit's JSON encoder, with dates as integer seconds since 1970 instead of doubles.
    fileprivate static var encoder: JSONEncoder {
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .integerSecondsSince1970
        return encoder
    }
}

/// The claims of a client assertion (RFC 7523 §3).
package struct ClientAssertionClaims: JWTPayload, Equatable {
    package var iss: IssuerClaim
    package var sub: SubjectClaim
    package var aud: AudienceClaim
    package var jti: IDClaim
    package var iat: IssuedAtClaim
    package var exp: ExpirationClaim

    package func verify(using algorithm: some JWTAlgorithm) async throws {
        try self.exp.verifyNotExpired()
    }
}
