import BearerdTokens
import Foundation

/// The protected header of a compact JWS, read before anything else to pick the key: bounded,
/// and refused unless it is three base64url parts whose first is a JSON object with an `alg`.
struct JOSEHeader: Sendable {
    /// The longest token looked at.
    static let maxTokenBytes = 16 << 10

    var alg: String
    var kid: String?

    init(compact token: String) throws(TokenEngineError) {
        guard token.utf8.count <= Self.maxTokenBytes else {
            throw TokenEngineError.verification("it is longer than \(Self.maxTokenBytes) bytes")
        }
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let data = JWTClaims.base64URLDecoded(parts[0]),
            let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any],
            let alg = object["alg"] as? String
        else {
            throw TokenEngineError.verification("it is not a signed JWT (three base64url parts with an alg)")
        }
        let kid = object["kid"] as? String
        guard alg.utf8.count <= 16, (kid?.utf8.count ?? 0) <= 256 else {
            throw TokenEngineError.verification("its header's alg or kid is implausibly long")
        }
        self.alg = alg
        self.kid = kid
    }
}
