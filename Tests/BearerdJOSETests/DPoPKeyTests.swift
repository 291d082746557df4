import BearerdAuth
import BearerdJOSE
import BearerdTestSupport
import BearerdTokens
import Foundation
import JWTKit
import Testing

/// The DPoP proofs bearerd signs (RFC 9449 §4.2), read back and verified with jwt-kit against the
/// public key the proof's own header carries, as a server does, on a manual clock.
@Suite("DPoP proofs")
struct DPoPKeyTests {
    struct Proof {
        var header: [String: Any]
        var claims: [String: Any]
    }

    struct ProofClaims: JWTPayload {
        var jti: String
        var htm: String
        var htu: String
        var iat: Int
        var ath: String?
        var nonce: String?

        func verify(using algorithm: some JWTAlgorithm) async throws {}
    }

    static func decode(_ part: Substring) throws -> [String: Any] {
        var base64 = part.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        base64 += String(repeating: "=", count: (4 - base64.utf8.count % 4) % 4)
        let data = try #require(Data(base64Encoded: base64))
        return try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
    }

    /// The proof's header and claims, after jwt-kit verified its signature with the header's key.
    static func verified(_ proof: String) async throws -> Proof {
        let parts = proof.split(separator: ".", omittingEmptySubsequences: false)
        try #require(parts.count == 3)
        let header = try Self.decode(parts[0])
        let jwk = try #require(header["jwk"] as? [String: String])
        let keys = JWTKeyCollection()
        await keys.add(ecdsa: try ES256PublicKey(parameters: (x: jwk["x"] ?? "", y: jwk["y"] ?? "")))
        _ = try await keys.verify(proof, as: ProofClaims.self)
        return Proof(header: header, claims: try Self.decode(parts[1]))
    }

    @Test func aProofCarriesWhatAServerChecksAndVerifiesWithTheKeyInItsHeader() async throws {
        let clock = ManualTokenClock(now: Date(timeIntervalSince1970: 1_900_000_000))
        let key = DPoPKey(clock: clock)
        // RFC 9449 §7.1's example token and its ath.
        let token = BearerToken("Kz~8mXK1EalYznwH-LC-1fBAo.4Ljp~zsPE_NeO.gxU")
        let signed = try #require(
            key.proof(method: "GET", url: "https://api.example/r\"x", accessToken: token, nonce: "n-1")
        )
        let proof = try await Self.verified(signed)
        #expect(proof.header["typ"] as? String == "dpop+jwt")
        #expect(proof.header["alg"] as? String == "ES256")
        let jwk = try #require(proof.header["jwk"] as? [String: String])
        #expect(jwk["kty"] == "EC" && jwk["crv"] == "P-256" && jwk["d"] == nil, "the public key only")
        #expect(proof.claims["htm"] as? String == "GET")
        #expect(proof.claims["htu"] as? String == "https://api.example/r\"x")
        #expect(proof.claims["iat"] as? Int == 1_900_000_000)
        #expect(proof.claims["ath"] as? String == "fUHyO2r2Z3DZ53EsNrWBb0xWXoaNy59IiKCAqksmQEo")
        #expect(proof.claims["nonce"] as? String == "n-1")
        #expect((proof.claims["jti"] as? String)?.utf8.count == 22, "128 random bits")

        // A token request: no ath; a nonce RFC 9449 does not allow is left out.
        let plain = try await Self.verified(
            try #require(key.proof(method: "POST", url: "https://idp/token", accessToken: nil, nonce: "a\"b"))
        )
        #expect(plain.claims["ath"] == nil && plain.claims["nonce"] == nil)
        #expect(plain.header["jwk"] as? [String: String] == jwk, "one key for every proof")
    }

    /// Servers that read a NumericDate as an integer refuse a fractional one: `iat` is whole
    /// seconds, a JSON integer in the payload's text.
    @Test func aProofSaysItsTimeInWholeSeconds() throws {
        let key = DPoPKey(clock: ManualTokenClock(now: Date(timeIntervalSince1970: 1_795_706_588.647921)))
        let proof = try #require(key.proof(method: "GET", url: "http://a/", accessToken: nil, nonce: nil))
        var base64 = String(proof.split(separator: ".")[1]).replacingOccurrences(of: "-", with: "+")
            .replacingOccurrences(of: "_", with: "/")
        base64 += String(repeating: "=", count: (4 - base64.utf8.count % 4) % 4)
        let payload = String(decoding: try #require(Data(base64Encoded: base64)), as: UTF8.self)
        #expect(payload.contains(/"iat":1795706588[,}]/), "\(payload)")
    }

    @Test func aClockBeyondWhatAJWTCanSayGivesNoTrap() throws {
        for far in [1e300, -1e300, Double.infinity] {
            let key = DPoPKey(clock: ManualTokenClock(now: Date(timeIntervalSince1970: far)))
            let proof = try #require(key.proof(method: "GET", url: "http://a/", accessToken: nil, nonce: nil))
            #expect(try Self.decode(proof.split(separator: ".")[1])["iat"] as? Int == 0)
        }
    }

    @Test func everyProofHasAJtiOfItsOwn() throws {
        let key = DPoPKey()
        var seen = Set<String>()
        for _ in 0..<500 {
            let proof = try #require(
                key.proof(method: "GET", url: "http://a/", accessToken: BearerToken("t"), nonce: nil)
            )
            let claims = try Self.decode(proof.split(separator: ".")[1])
            seen.insert(try #require(claims["jti"] as? String))
        }
        #expect(seen.count == 500)
    }

    @Test func theStoredKeyComesBackAndAnythingElseIsRefused() async throws {
        let key = DPoPKey()
        let stored = key.exported()
        #expect(!"\(stored)".contains(stored.value), "the key is redacted when printed")
        let header = { (key: DPoPKey) throws -> [String: Any] in
            try Self.decode(
                try #require(key.proof(method: "GET", url: "http://a/", accessToken: nil, nonce: nil)).split(
                    separator: "."
                )[0]
            )
        }
        let other = DPoPKey()
        #expect(other.adopt(stored))
        #expect(try header(other)["jwk"] as? [String: String] == (try header(key)["jwk"] as? [String: String]))
        #expect(other.exported() == stored)
        for bad in ["", "not base64!", "AAAA", String(repeating: "A", count: 43)] {
            #expect(!other.adopt(Secret(bad)), "\(bad)")
        }
        #expect(other.exported() == stored, "a refused key changes nothing")
    }
}
