import BearerdAuth
import BearerdTokens
import Foundation
import JWTKit

/// `auth.verify`: a JWT access token's signature, checked with jwt-kit against the issuer's JWKS
/// (or an HS256 secret), and its `iss`, `aud`, `nbf` and `exp` on bearerd's clock.
package final class JWTTokenVerifier: TokenVerifier {
    /// Where the keys come from.
    package enum Keys: Sendable {
        /// The issuer's JWKS at this URL (`auth.verify.jwks_uri`).
        case jwks(JWKSCache)
        /// A secret shared with the issuer (`auth.verify.secret_file`): HS256 only.
        case secret(Secret)
    }

    /// What a token must say.
    package struct Expectations: Sendable {
        /// `iss`, when set (`auth.verify.issuer`, by default `auth.issuer`).
        package var issuer: String?
        /// A value `aud` must hold, when set (`auth.verify.audience`).
        package var audience: String?
        /// Clock skew allowed on `nbf` and `exp`.
        package var leeway: TimeInterval

        package init(issuer: String?, audience: String?, leeway: TimeInterval = 60) {
            self.issuer = issuer
            self.audience = audience
            self.leeway = leeway
        }
    }

    /// The signature algorithms accepted from a JWKS: never `none`, never a MAC with a public key.
    static let asymmetric: Set<String> = [
        "RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512",
    ]

    private let keys: Keys
    private let expectations: Expectations
    private let clock: any TokenClock

    package init(keys: Keys, expectations: Expectations, clock: any TokenClock = SystemTokenClock()) {
        self.keys = keys
        self.expectations = expectations
        self.clock = clock
    }

    package func verify(
        _ token: BearerToken,
        transport: any TokenTransport,
        at serverTime: Date?
    ) async throws(TokenEngineError) {
        let header = try JOSEHeader(compact: token.value)
        let collection: JWTKeyCollection
        switch self.keys {
        case .secret(let secret):
            guard header.alg == "HS256" else {
                throw TokenEngineError.verification(
                    "the token is signed \(Printable.bounded(header.alg)), and auth.verify.secret_file checks HS256 only"
                )
            }
            collection = JWTKeyCollection()
            await collection.add(hmac: HMACKey(from: secret.value), digestAlgorithm: .sha256)
        case .jwks(let cache):
            guard Self.asymmetric.contains(header.alg) else {
                throw TokenEngineError.verification(
                    "the token is signed \(Printable.bounded(header.alg)), which a JWKS does not verify"
                )
            }
            collection = try await cache.keys(for: header.kid, algorithm: header.alg, transport: transport)
        }
        let claims: AccessTokenClaims
        do {
            claims = try await collection.verify(token.value, as: AccessTokenClaims.self)
        } catch {
            throw TokenEngineError.verification(
                "its signature does not verify with the issuer's key\(header.kid.map { " \"\(Printable.bounded($0))\"" } ?? "")"
            )
        }
        try self.check(claims, now: serverTime ?? self.clock.now)
    }

    /// A claim's time for a message: whole seconds when plausible; a token server's 1e300 is
    /// shown as it is instead of trapping in `Int(_:)`.
    static func epoch(_ seconds: Double) -> String {
        abs(seconds) < 1e15 ? String(Int(seconds)) : "\(seconds)"
    }

    private func check(_ claims: AccessTokenClaims, now: Date) throws(TokenEngineError) {
        let leeway = self.expectations.leeway
        if let issuer = self.expectations.issuer, claims.iss != issuer {
            throw TokenEngineError.verification(
                "its iss is \(claims.iss.map { "\"\(Printable.bounded($0))\"" } ?? "missing"), not \"\(issuer)\" (auth.verify.issuer)"
            )
        }
        if let audience = self.expectations.audience, !(claims.aud?.values ?? []).contains(audience) {
            throw TokenEngineError.verification("its aud does not name \"\(audience)\" (auth.verify.audience)")
        }
        if let nbf = claims.nbf, nbf > now.timeIntervalSince1970 + leeway {
            throw TokenEngineError.verification("it is not valid before \(Self.epoch(nbf)) (nbf), later than now")
        }
        if let exp = claims.exp, exp < now.timeIntervalSince1970 - leeway {
            throw TokenEngineError.verification("it expired at \(Self.epoch(exp)) (exp)")
        }
    }
}

/// The claims of an access token that `auth.verify` checks; jwt-kit checks the signature only,
/// the times are checked on bearerd's clock.
struct AccessTokenClaims: JWTPayload {
    /// `aud`: one string or several.
    struct Audience: Codable, Sendable {
        var values: [String]
        init(from decoder: any Decoder) throws {
            let container = try decoder.singleValueContainer()
            if let one = try? container.decode(String.self) {
                self.values = [one]
            } else {
                self.values = try container.decode([String].self)
            }
        }
        func encode(to encoder: any Encoder) throws {
            var container = encoder.singleValueContainer()
            try container.encode(self.values)
        }
    }

    var iss: String?
    var aud: Audience?
    var exp: Double?
    var nbf: Double?

    func verify(using algorithm: some JWTAlgorithm) async throws {}
}

/// Text from a token, bounded and printable, for a message.
enum Printable {
    static func bounded(_ text: String) -> String {
        String(String.UnicodeScalarView(text.unicodeScalars.prefix(80).filter { $0.value >= 0x20 && $0.value < 0x7F }))
    }
}
