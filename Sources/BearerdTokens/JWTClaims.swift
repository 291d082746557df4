import Foundation

/// Reads the `exp` claim of a JWT access token (RFC 7519 §4.1.4), only to know when to refresh,
/// and `sub` (§4.1.2), only for `bearerd status`.
/// The signature is not checked: bearerd is not the token's audience and never trusts a claim
/// for anything but its own refresh timing. A token that is not a JWS compact serialisation
/// with a JSON payload is opaque, which is not an error.
package enum JWTClaims {
    /// `exp` in seconds since 1970, or `nil` for an opaque token or one without a numeric `exp`.
    package static func expiry(of token: String) -> Double? {
        guard let exp = Self.claims(of: token)?.exp, exp.isFinite, exp > 0 else { return nil }
        return exp
    }

    /// `sub`, when the token is a JWT that has one made of printable characters (at most 256).
    package static func subject(of token: String) -> String? {
        guard let sub = Self.claims(of: token)?.sub, !sub.isEmpty, sub.utf8.count <= 256,
            sub.unicodeScalars.allSatisfy({ $0.value >= 0x20 && $0.value != 0x7F })
        else { return nil }
        return sub
    }

    private static func claims(of token: String) -> Claims? {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let payload = Self.base64URLDecoded(parts[1]) else { return nil }
        return try? JSONDecoder().decode(Claims.self, from: payload)
    }

    private struct Claims: Decodable {
        var exp: Double?
        var sub: String?

        init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            // A claim of another type is ignored rather than making the whole payload unreadable.
            self.exp = try? container.decodeIfPresent(Double.self, forKey: .exp)
            self.sub = try? container.decodeIfPresent(String.self, forKey: .sub)
        }

        enum CodingKeys: String, CodingKey { case exp, sub }
    }

    /// base64url (RFC 4648 §5), with or without `=` padding; the one decoder the JOSE code shares.
    package static func base64URLDecoded(_ text: Substring) -> Data? {
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
