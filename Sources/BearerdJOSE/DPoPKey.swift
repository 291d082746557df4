import BearerdAuth
import BearerdTokens
import Crypto
import Foundation
import Synchronization

/// The P-256 key of `auth.dpop` (RFC 9449) and the proofs it signs: ES256, the algorithm every
/// DPoP server accepts. The key is made here, kept sealed in the store with the tokens bound to
/// it (``ProofKey``), and shared by a fleet through its row.
///
/// The protected header (`typ`, `alg`, the public `jwk`) is the same for every proof of a key,
/// so it is encoded once; a proof costs a small JSON payload, one SHA-256 of the access token
/// when it changed, and one signature.
package final class DPoPKey: DPoPProver, ProofKey {
    private struct Loaded: Sendable {
        var key: P256.Signing.PrivateKey
        /// base64url of the protected header.
        var header: String
        /// The last access token's `ath`, so that a token's hash is taken once, not per request.
        var ath: (token: String, hash: String)?
    }

    private let loaded: Mutex<Loaded>
    private let clock: any TokenClock

    /// A new random key.
    package init(clock: any TokenClock = SystemTokenClock()) {
        self.clock = clock
        self.loaded = Mutex(Self.load(P256.Signing.PrivateKey()))
    }

    // MARK: ProofKey

    package func exported() -> Secret {
        Secret(Base64URL.encode(self.loaded.withLock { $0.key.rawRepresentation }))
    }

    package func adopt(_ stored: Secret) -> Bool {
        guard let raw = JWTClaims.base64URLDecoded(Substring(stored.value)), raw.count == 32,
            let key = try? P256.Signing.PrivateKey(rawRepresentation: raw)
        else { return false }
        let next = Self.load(key)
        self.loaded.withLock { $0 = next }
        return true
    }

    // MARK: DPoPProver

    package func proof(method: String, url: String, accessToken: BearerToken?, nonce: String?) -> String? {
        let (key, header, ath) = self.loaded.withLock { loaded -> (P256.Signing.PrivateKey, String, String?) in
            guard let token = accessToken?.value else { return (loaded.key, loaded.header, nil) }
            if let cached = loaded.ath, cached.token == token { return (loaded.key, loaded.header, cached.hash) }
            let hash = Base64URL.encode(Array(SHA256.hash(data: Array(token.utf8))))
            loaded.ath = (token, hash)
            return (loaded.key, loaded.header, hash)
        }
        var payload = "{\"jti\":\"" + Self.jti() + "\",\"htm\":\"" + JSONEscaping.escaped(method)
        payload += "\",\"htu\":\"" + JSONEscaping.escaped(url) + "\",\"iat\":"
        payload += String(Self.seconds(self.clock.now))
        if let ath { payload += ",\"ath\":\"" + ath + "\"" }
        if let nonce, DPoPNonce.isValid(nonce) { payload += ",\"nonce\":\"" + nonce + "\"" }
        payload += "}"
        let input = header + "." + Base64URL.encode(payload.utf8)
        guard let signature = try? key.signature(for: Array(input.utf8)) else { return nil }
        return input + "." + Base64URL.encode(signature.rawRepresentation)
    }

    // MARK: Parts

    private static func load(_ key: P256.Signing.PrivateKey) -> Loaded {
        let point = key.publicKey.rawRepresentation
        let x = Base64URL.encode(point.prefix(32))
        let y = Base64URL.encode(point.suffix(32))
        let header =
            "{\"typ\":\"dpop+jwt\",\"alg\":\"ES256\",\"jwk\":{\"kty\":\"EC\",\"crv\":\"P-256\",\"x\":\"\(x)\",\"y\":\"\(y)\"}}"
        return Loaded(
            key: key,
            header: Base64URL.encode(header.utf8),
            ath: nil
        )
    }

    /// Whole seconds since 1970 for `iat`; a clock beyond what a JWT can say gives 0, never a trap.
    static func seconds(_ date: Date) -> Int64 {
        let seconds = date.timeIntervalSince1970.rounded(.down)
        return seconds.isFinite && abs(seconds) < 1e15 ? Int64(seconds) : 0
    }

    /// 128 random bits: unique per proof (RFC 9449 §4.2 `jti`).
    private static func jti() -> String {
        var generator = SystemRandomNumberGenerator()
        var bytes = [UInt8](repeating: 0, count: 16)
        for index in stride(from: 0, to: 16, by: 8) {
            let word = generator.next() as UInt64
            for offset in 0..<8 { bytes[index + offset] = UInt8(truncatingIfNeeded: word >> (8 * offset)) }
        }
        return Base64URL.encode(bytes)
    }
}
