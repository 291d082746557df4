import BearerdAuth
import Foundation

/// A custom JSON token API, such as Better Auth's `POST /api/auth/sign-in-email` and
/// `POST /api/auth/refresh`, or AWS-style APIs that want their own content type and headers.
///
/// Request bodies are templates: `{{username}}`, `{{password}}` and `{{refresh_token}}` are
/// replaced by the values, JSON-escaped (the template supplies the quotes). Tokens and expiry
/// are found in the answer by RFC 6901 JSON pointers.
package struct JSONSource: TokenSource {
    /// A JSON API's session ends at its own logout URL.
    package var revocationKey: String { "auth.json.logout_url" }

    /// The source's settings are the config's `auth.json` section, defaults and all.
    package typealias Settings = JSONSourceSettings

    let settings: Settings

    package init(settings: Settings) {
        self.settings = settings
    }

    package var clientGrant: ClientGrant? { nil }

    package func refreshRequest(_ refreshToken: Secret, transport: any TokenTransport) async throws -> TokenHTTPRequest
    {
        self.request(
            self.settings.refreshURL,
            Self.fill(self.settings.refreshBody, ["refresh_token": refreshToken.value])
        )
    }

    package func clientCredentialsRequest(transport: any TokenTransport) async throws -> TokenHTTPRequest {
        throw TokenEngineError.source("a JSON token API has no client token")
    }

    package func passwordRequest(
        username: String,
        password: Secret,
        transport: any TokenTransport
    ) async throws
        -> TokenHTTPRequest
    {
        guard let url = self.settings.loginURL else {
            throw TokenEngineError.source("auth.json.login_url is not set: bearerd cannot log in to this API")
        }
        return self.request(
            url,
            Self.fill(self.settings.loginBody, ["username": username, "password": password.value])
        )
    }

    package func parseIssued(_ body: [UInt8]) throws -> IssuedTokens {
        guard let document = JSONValue.parse(body) else { throw TokenEngineError.body("not JSON") }
        guard let access = document.at(pointer: self.settings.accessTokenPointer)?.stringValue, !access.isEmpty else {
            throw TokenEngineError.body("no access token at \(self.settings.accessTokenPointer)")
        }
        guard BearerToken.isValidTokenValue(access) else {
            throw TokenEngineError.body("an access token with characters a bearer token may not have (RFC 6750)")
        }
        var refresh: Secret?
        if let pointer = self.settings.refreshTokenPointer, let value = document.at(pointer: pointer), value != .null {
            guard let value = value.stringValue, !value.isEmpty else {
                throw TokenEngineError.body("a refresh token at \(pointer) that is not a string")
            }
            refresh = Secret(value)
        }
        var lifetime: Duration?
        if let pointer = self.settings.expiresInPointer {
            lifetime = try OAuth2TokenResponse.seconds(document.at(pointer: pointer), name: pointer).map {
                Duration.seconds($0)
            }
        }
        var expiresAt: Date?
        if let pointer = self.settings.expiresAtPointer, let value = document.at(pointer: pointer), value != .null {
            expiresAt = try Self.date(value, pointer: pointer)
        }
        return IssuedTokens(
            accessToken: BearerToken(access),
            refreshToken: refresh,
            lifetime: lifetime,
            expiresAt: expiresAt
        )
    }

    /// A sign-in answer without a refresh token where `auth.json.refresh_token` points would
    /// end the session at the first refresh, in silence: it is an error that names the pointer
    /// and the keys the answer has (never their values). An API that issues none says so with
    /// `auth.json.refresh_token: none`.
    package func parseLogin(_ body: [UInt8]) throws -> IssuedTokens {
        let issued = try self.parseIssued(body)
        if let pointer = self.settings.refreshTokenPointer, issued.refreshToken == nil {
            let keys = JSONValue.parse(body).map { Self.pointers(in: $0) } ?? []
            let shown = keys.isEmpty ? "no keys" : keys.prefix(20).joined(separator: ", ")
            throw TokenEngineError.body(
                "the sign-in answer has no refresh token at \(pointer) (auth.json.refresh_token); it has \(shown). Point auth.json.refresh_token at it, or set it to none if this API issues none"
            )
        }
        return issued
    }

    /// The JSON pointers of an answer's members, three levels deep, without their values.
    static func pointers(in value: JSONValue, prefix: String = "", depth: Int = 0) -> [String] {
        guard depth < 3, case .object(let members) = value else { return [] }
        return members.keys.sorted().flatMap { key -> [String] in
            let printable = key.unicodeScalars.allSatisfy { $0.value >= 0x20 && $0.value < 0x7F }
            let escaped =
                printable
                ? key.replacingOccurrences(of: "~", with: "~0").replacingOccurrences(of: "/", with: "~1") : "?"
            let pointer = prefix + "/" + String(escaped.prefix(64))
            return [pointer] + Self.pointers(in: members[key]!, prefix: pointer, depth: depth + 1)
        }
    }

    package func revocationRequest(
        refreshToken: Secret?,
        accessToken: BearerToken?,
        transport: any TokenTransport
    ) async throws -> TokenHTTPRequest? {
        guard let url = self.settings.logoutURL else { return nil }
        var values: [String: String] = [:]
        if let refreshToken { values["refresh_token"] = refreshToken.value }
        if let accessToken { values["access_token"] = accessToken.value }
        return self.request(url, Self.fill(self.settings.logoutBody, values))
    }

    package func deviceAuthorizationRequest(transport: any TokenTransport) async throws -> TokenHTTPRequest {
        throw TokenEngineError.source(
            "a JSON token API has no device login: run `bearerd login` with a user name and password instead"
        )
    }

    package func deviceTokenRequest(deviceCode: Secret, transport: any TokenTransport) async throws -> TokenHTTPRequest
    {
        throw TokenEngineError.source("a JSON token API has no device login")
    }

    private func request(_ url: String, _ body: String) -> TokenHTTPRequest {
        var headers = [("content-type", self.settings.contentType), ("accept", "application/json")]
        headers += self.settings.headers.map { ($0.name, $0.value) }
        return TokenHTTPRequest(url: url, headers: headers, body: Array(body.utf8))
    }

    /// Replaces `{{name}}` by the JSON-escaped value.
    static func fill(_ template: String, _ values: [String: String]) -> String {
        var out = template
        for (name, value) in values {
            out = out.replacingOccurrences(of: "{{\(name)}}", with: JSONEscaping.escaped(value))
        }
        return out
    }

    static func date(_ value: JSONValue, pointer: String) throws -> Date {
        switch value {
        case .number(let number) where number.isFinite && number > 0:
            // Milliseconds since 1970 are common too; no expiry in seconds is past year 5000.
            return Date(timeIntervalSince1970: number > 100_000_000_000 ? number / 1000 : number)
        case .string(let text):
            if let date = Timestamp.rfc3339(text) { return date }
            if let seconds = Double(text) { return try Self.date(.number(seconds), pointer: pointer) }
            throw TokenEngineError.body("an expiry at \(pointer) that is not RFC 3339 or a number")
        default:
            throw TokenEngineError.body("an expiry at \(pointer) that is not RFC 3339 or a number")
        }
    }
}
