import BearerdAuth
import Foundation

/// A successful RFC 6749 §5.1 token response.
enum OAuth2TokenResponse {
    /// `dpop`: the token must be DPoP-bound (`auth.dpop`); otherwise it must be a bearer token.
    /// `exchange`: the answer to an RFC 8693 token exchange (§2.2.1), whose `issued_token_type`
    /// must be a token an API takes, and whose refresh token is not kept: the subject token is
    /// exchanged again instead.
    static func parse(
        _ body: [UInt8],
        dpop: Bool = false,
        exchange: Bool = false,
        requestedTokenType: String? = nil
    ) throws -> IssuedTokens {
        guard let object = JSONValue.parse(body), case .object = object else {
            throw TokenEngineError.body("not a JSON object")
        }
        guard let access = object["access_token"]?.stringValue, !access.isEmpty else {
            throw TokenEngineError.body("no access_token")
        }
        guard BearerToken.isValidTokenValue(access) else {
            throw TokenEngineError.body("an access_token with characters a bearer token may not have (RFC 6750)")
        }
        // RFC 6749 §7.1: the type is case-insensitive ("bearer", "Bearer").
        let type = object["token_type"].flatMap { $0 == .null ? nil : ($0.stringValue?.lowercased() ?? "?") }
        if exchange { try Self.checkExchanged(object, tokenType: type, requested: requestedTokenType) }
        if dpop {
            // RFC 9449 §5: a server that ignored the proof issues a bearer token.
            guard type == "dpop" else {
                throw TokenEngineError.body(
                    "a token_type of \(type == "bearer" ? "Bearer" : "other than DPoP") while auth.dpop is on: the server did not bind the token to bearerd's key; enable DPoP for this client at the server, or set auth.dpop: false"
                )
            }
        } else if let type, type != "bearer" {
            throw TokenEngineError.body(
                type == "dpop"
                    ? "a token_type of DPoP: the server binds this client's tokens to a key; set auth.dpop: true"
                    : "a token_type other than Bearer"
            )
        }
        var refresh: Secret?
        if !exchange, let value = object["refresh_token"], value != .null {
            guard let value = value.stringValue, !value.isEmpty else {
                throw TokenEngineError.body("a refresh_token that is not a string")
            }
            refresh = Secret(value)
        }
        return IssuedTokens(
            accessToken: BearerToken(access),
            refreshToken: refresh,
            lifetime: try Self.seconds(object["expires_in"], name: "expires_in").map { Duration.seconds($0) },
            scope: object["scope"]?.stringValue.flatMap { $0.isEmpty || $0.utf8.count > 1024 ? nil : $0 }
        )
    }

    /// RFC 8693 §2.2.1: `issued_token_type` says what was issued; a token that is not an access
    /// token (an ID token, a SAML assertion, a refresh token, or `token_type` N_A) cannot be
    /// sent to the API. A server that leaves the type out is taken at its `token_type`.
    private static func checkExchanged(_ object: JSONValue, tokenType: String?, requested: String?) throws {
        // An access token, a JWT, or what `requested_token_type` asked for (a custom type an API takes).
        let usable =
            ["urn:ietf:params:oauth:token-type:access_token", "urn:ietf:params:oauth:token-type:jwt"]
            + (requested.map { [$0] } ?? [])
        if let issued = object["issued_token_type"], issued != .null {
            guard let issued = issued.stringValue, usable.contains(issued) else {
                let text = object["issued_token_type"]?.stringValue ?? "?"
                // Echoed only when it is shaped as a type URN, never what a broken server put there.
                let printable =
                    text.hasPrefix("urn:") && text.utf8.count <= 80
                    && text.unicodeScalars.allSatisfy { $0.value > 0x20 && $0.value < 0x7F }
                let shown = printable ? text : "an unreadable type"
                throw TokenEngineError.body(
                    "an issued_token_type of \(shown), not an access token: set auth.token_exchange.requested_token_type: access_token"
                )
            }
        }
        if tokenType == "n_a" {
            throw TokenEngineError.body(
                "a token_type of N_A: the server says the token it issued is not an access token; set auth.token_exchange.requested_token_type: access_token"
            )
        }
    }

    /// A number of seconds, as a JSON number or a numeric string (some servers send "3600"), at
    /// most ``RefreshPolicy/longestLifetime`` (a server's 1e300 would not fit a `Duration`).
    static func seconds(_ value: JSONValue?, name: String) throws -> Double? {
        let number: Double?
        switch value {
        case nil, .null: return nil
        case .number(let value): number = value
        case .string(let value): number = Double(value.trimmingCharacters(in: .whitespaces))
        default: number = nil
        }
        guard let number, number.isFinite, number >= 0 else {
            throw TokenEngineError.body("an \(name) that is not a number")
        }
        return min(number, RefreshPolicy.longestLifetime)
    }
}
