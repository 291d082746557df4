/// Signs DPoP proofs (RFC 9449 §4) with the key bearerd's access tokens are bound to: one fresh
/// proof per HTTP request, to the token server and to the upstream. BearerdJOSE implements it;
/// the token client and the data path only ask for proofs through this seam.
package protocol DPoPProver: Sendable {
    /// A compact JWS for one request: `htm` = `method`, `htu` = `url` (without query or
    /// fragment), a unique `jti`, `iat` now, `ath` (the SHA-256 of `accessToken`) when the
    /// request carries one, and `nonce` when the server gave one. `nil` when it cannot be signed.
    /// Must not block: the data path calls it on its event loop.
    func proof(method: String, url: String, accessToken: BearerToken?, nonce: String?) -> String?
}

/// The `DPoP-Nonce` values servers send (RFC 9449 §8, §9): kept only when they are what the RFC
/// allows (`1*NQCHAR`, bounded here), so a hostile value can never reach a header or a log.
package enum DPoPNonce {
    /// The longest nonce kept.
    package static let maxLength = 512

    package static func isValid(_ value: some StringProtocol) -> Bool {
        let utf8 = value.utf8
        guard !utf8.isEmpty, utf8.count <= Self.maxLength else { return false }
        return utf8.allSatisfy { byte in
            byte == 0x21 || (byte >= 0x23 && byte <= 0x5B) || (byte >= 0x5D && byte <= 0x7E)
        }
    }
}
