import Foundation

/// Reads the `exp` claim of a JWT access token (RFC 7519 §4.1.4), only to know when to refresh.
/// The signature is not checked: bearerd is not the token's audience and never trusts a claim
/// for anything but its own refresh timing. A token that is not a JWS compact serialisation
/// with a JSON payload is opaque, which is not an error.
public enum JWTClaims {
    /// `exp` in seconds since 1970, or `nil` for an opaque token or one without a numeric `exp`.
    public static func expiry(of token: String) -> Double? {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let payload = Self.base64URLDecoded(parts[1]) else { return nil }
        guard let claims = try? JSONDecoder().decode(Claims.self, from: payload), let exp = claims.exp,
            exp.isFinite, exp > 0
        else { return nil }
        return exp
    }

    private struct Claims: Decodable {
        var exp: Double?

        init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            // A non-numeric `exp` makes the token opaque rather than the whole payload unreadable.
            self.exp = try? container.decodeIfPresent(Double.self, forKey: .exp)
        }

        enum CodingKeys: String, CodingKey { case exp }
    }

    /// base64url (RFC 4648 §5), with or without `=` padding.
    static func base64URLDecoded(_ text: Substring) -> Data? {
        var base64 = String(text.map { $0 == "-" ? "+" : ($0 == "_" ? "/" : $0) })
        base64 = base64.trimmingCharacters(in: CharacterSet(charactersIn: "="))
        switch base64.utf8.count % 4 {
        case 1: return nil
        case 2: base64 += "=="
        case 3: base64 += "="
        default: break
        }
        return Data(base64Encoded: base64)
    }
}
