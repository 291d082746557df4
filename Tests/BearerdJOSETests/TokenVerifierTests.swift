import BearerdAuth
import BearerdJOSE
import BearerdTestSupport
import BearerdTokens
import Foundation
import JWTKit
import Synchronization
import Testing

/// `auth.verify` on a manual clock: signatures against a JWKS served by a fake endpoint, its
/// cache and key rollover, the claims, and the algorithms it refuses.
@Suite("auth.verify: access tokens checked before use")
struct TokenVerifierTests {
    static let issuer = "https://idp.example"
    static let jwksURL = "https://idp.example/jwks"

    /// An issuer: RSA keys by kid, the JWKS it publishes, and the tokens it signs.
    final class Issuer: Sendable {
        let published = Mutex<[String]>([])
        let fetches = Mutex(0)

        init() throws {}

        func key(_ kid: String) throws -> Insecure.RSA.PrivateKey {
            let path = try TestKeys.shared("rsa:2048", named: kid).privateKey
            return try Insecure.RSA.PrivateKey(pem: try String(contentsOfFile: path, encoding: .utf8))
        }

        func publish(_ kids: [String]) { self.published.withLock { $0 = kids } }

        var endpoint: FakeTokenEndpoint {
            FakeTokenEndpoint { request, _ in
                self.fetches.withLock { $0 += 1 }
                var keys: [[String: String]] = []
                for kid in self.published.withLock({ $0 }) {
                    let (modulus, exponent) = try self.key(kid).publicKey.getKeyPrimitives()
                    keys.append([
                        "kty": "RSA", "kid": kid, "use": "sig", "alg": "RS256",
                        "n": Self.base64URL(modulus), "e": Self.base64URL(exponent),
                    ])
                }
                keys.append(["kty": "RSA", "kid": "enc-key", "use": "enc", "n": "AQAB", "e": "AQAB"])
                let body = try JSONSerialization.data(withJSONObject: ["keys": keys])
                return TokenHTTPResponse(
                    status: request.url == TokenVerifierTests.jwksURL ? 200 : 404,
                    body: Array(body)
                )
            }
        }

        func sign(_ claims: [String: Any], kid: String, with signer: String? = nil) async throws -> BearerToken {
            let keys = JWTKeyCollection()
            await keys.add(rsa: try self.key(signer ?? kid), digestAlgorithm: .sha256, kid: JWKIdentifier(string: kid))
            return BearerToken(try await keys.sign(RawClaims(claims), kid: JWKIdentifier(string: kid)))
        }

        static func base64URL(_ data: Data) -> String {
            data.base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
                .replacingOccurrences(of: "=", with: "")
        }
    }

    let clock = ManualTokenClock(now: Date(timeIntervalSince1970: 1_900_000_000))
    var now: Int { Int(self.clock.now.timeIntervalSince1970) }

    func verifier(_ cache: JWKSCache, audience: String? = "api://orders") -> JWTTokenVerifier {
        JWTTokenVerifier(
            keys: .jwks(cache),
            expectations: .init(issuer: Self.issuer, audience: audience),
            clock: self.clock
        )
    }

    func claims(_ extra: [String: Any] = [:]) -> [String: Any] {
        ["iss": Self.issuer, "aud": ["api://orders", "api://other"], "exp": self.now + 300, "nbf": self.now - 5]
            .merging(extra) { $1 }
    }

    /// The reason `verify` gives, or `nil` when it passes.
    func problem(_ verifier: JWTTokenVerifier, _ token: BearerToken, _ issuer: Issuer) async -> String? {
        do throws(TokenEngineError) {
            try await verifier.verify(token, transport: issuer.endpoint)
            return nil
        } catch {
            #expect(error.code == .verification)
            return error.description
        }
    }

    @Test func aGoodTokenPassesAndTheSetIsFetchedOnce() async throws {
        let issuer = try Issuer()
        issuer.publish(["k1"])
        let verifier = self.verifier(JWKSCache(.url(Self.jwksURL), clock: self.clock))
        for _ in 0..<3 {
            #expect(await self.problem(verifier, try await issuer.sign(self.claims(), kid: "k1"), issuer) == nil)
        }
        #expect(issuer.fetches.withLock { $0 } == 1)
    }

    @Test func aKeyRolloverIsFetchedOnItsFirstTokenAndUnknownKidsCannotHammerTheIssuer() async throws {
        let issuer = try Issuer()
        issuer.publish(["k1"])
        let verifier = self.verifier(JWKSCache(.url(Self.jwksURL), minimumInterval: 30, clock: self.clock))
        #expect(await self.problem(verifier, try await issuer.sign(self.claims(), kid: "k1"), issuer) == nil)
        // The issuer rotates to k2; a minute later the first k2 token fetches the set again.
        issuer.publish(["k1", "k2"])
        self.clock.advance(by: .seconds(60))
        #expect(await self.problem(verifier, try await issuer.sign(self.claims(), kid: "k2"), issuer) == nil)
        #expect(issuer.fetches.withLock { $0 } == 2)
        // Tokens naming keys nobody published fetch at most once per minimum interval: none
        // within 30 s of the last fetch, then one.
        for index in 0..<5 {
            let unknown = try await issuer.sign(self.claims(), kid: "k\(index + 3)")
            #expect(await self.problem(verifier, unknown, issuer)?.contains("has no key \"k\(index + 3)\"") == true)
        }
        #expect(issuer.fetches.withLock { $0 } == 2)
        self.clock.advance(by: .seconds(30))
        for _ in 0..<3 { _ = await self.problem(verifier, try await issuer.sign(self.claims(), kid: "k9"), issuer) }
        #expect(issuer.fetches.withLock { $0 } == 3)
    }

    @Test(
        arguments: [
            (["iss": "https://evil.example"], "its iss is \"https://evil.example\""),
            (["aud": "api://other"], "its aud does not name \"api://orders\""),
            (["nbf": 1_900_000_600], "not valid before"),
            (["exp": 1_899_999_000], "it expired"),
            // Found by the before-stop read: Int(1e300) trapped in the message.
            (["nbf": 1e300], "not valid before 1e+300"),
            (["exp": -1e300], "it expired at -1e+300"),
        ] as [([String: any Sendable], String)]
    )
    func aClaimThatIsWrongIsNamed(extra: [String: any Sendable], says: String) async throws {
        let issuer = try Issuer()
        issuer.publish(["k1"])
        let token = try await issuer.sign(self.claims(extra), kid: "k1")
        let problem = await self.problem(self.verifier(JWKSCache(.url(Self.jwksURL), clock: self.clock)), token, issuer)
        #expect(problem?.contains(says) == true, "\(problem ?? "passed")")
        #expect(problem?.contains(token.value) != true)
    }

    @Test func aForgedSignatureAndForeignAlgorithmsAreRefused() async throws {
        let issuer = try Issuer()
        issuer.publish(["k1"])
        let verifier = self.verifier(JWKSCache(.url(Self.jwksURL), clock: self.clock))
        // Signed with another key under the published kid.
        let forged = try await issuer.sign(self.claims(), kid: "k1", with: "attacker")
        #expect(await self.problem(verifier, forged, issuer)?.contains("signature does not verify") == true)
        // alg none, and HS256 keyed with something a JWKS publishes: never accepted.
        let payload = Issuer.base64URL(try JSONSerialization.data(withJSONObject: self.claims()))
        for alg in ["none", "HS256"] {
            let header = Issuer.base64URL(Data(#"{"alg":"\#(alg)","kid":"k1"}"#.utf8))
            let problem = await self.problem(verifier, BearerToken("\(header).\(payload).c2ln"), issuer)
            #expect(problem?.contains("signed \(alg)") == true, "\(problem ?? "passed")")
        }
        #expect(
            await self.problem(verifier, BearerToken("opaque-token-123"), issuer)?.contains("not a signed JWT") == true
        )
    }

    @Test func anHS256SecretChecksHS256Only() async throws {
        let issuer = try Issuer()
        let secret = Secret("a shared secret of thirty-two bytes!")
        let verifier = JWTTokenVerifier(
            keys: .secret(secret),
            expectations: .init(issuer: Self.issuer, audience: nil),
            clock: self.clock
        )
        let keys = JWTKeyCollection()
        await keys.add(hmac: HMACKey(from: secret.value), digestAlgorithm: .sha256)
        let good = BearerToken(try await keys.sign(RawClaims(self.claims())))
        #expect(await self.problem(verifier, good, issuer) == nil)
        issuer.publish(["k1"])
        let rsa = try await issuer.sign(self.claims(), kid: "k1")
        #expect(await self.problem(verifier, rsa, issuer)?.contains("HS256 only") == true)
    }
}

/// Any JSON object as a JWT payload, for signing test tokens.
struct RawClaims: JWTPayload, @unchecked Sendable {
    let fields: [String: Any]

    init(_ fields: [String: Any]) { self.fields = fields }

    init(from decoder: any Decoder) throws { self.fields = [:] }

    func encode(to encoder: any Encoder) throws {
        let data = try JSONSerialization.data(withJSONObject: self.fields)
        let object = try JSONDecoder().decode([String: JSONScalar].self, from: data)
        var container = encoder.singleValueContainer()
        try container.encode(object)
    }

    func verify(using algorithm: some JWTAlgorithm) async throws {}
}

/// A JSON value of a test payload: a string, a number or an array of strings.
enum JSONScalar: Codable {
    case string(String)
    case number(Double)
    case strings([String])

    init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if let text = try? container.decode(String.self) {
            self = .string(text)
        } else if let number = try? container.decode(Double.self) {
            self = .number(number)
        } else {
            self = .strings(try container.decode([String].self))
        }
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .string(let text): try container.encode(text)
        case .number(let number): try container.encode(number)
        case .strings(let values): try container.encode(values)
        }
    }
}
