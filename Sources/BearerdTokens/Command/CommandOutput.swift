import BearerdAuth
import Foundation

/// What `auth.command` printed, read as one of the forms such programs print:
/// - a bare token on one line (`gcloud auth print-access-token`, `vault read -field=token`);
/// - kubectl's `ExecCredential` (`status.token`, `status.expirationTimestamp`, RFC 3339);
/// - an OAuth-style object: `access_token` with `expires_in` (seconds) or `expires_at` (RFC
///   3339, or seconds or milliseconds since 1970).
///
/// Without an expiry there, the token's own `exp` (a JWT) counts, then `auth.default_lifetime`.
/// Errors name the form and what is missing, never a value.
package enum CommandOutput {
    package static func parse(_ bytes: [UInt8]) throws(TokenEngineError) -> IssuedTokens {
        guard let text = String(validating: bytes, as: UTF8.self) else {
            throw .body("its output is not UTF-8 text")
        }
        let trimmed = text.trimmingCharacters(in: .whitespacesAndNewlines)
        guard !trimmed.isEmpty else { throw .body("it printed nothing on standard output") }
        if trimmed.hasPrefix("{") { return try Self.parseJSON(bytes) }
        guard !trimmed.contains(where: { $0 == "\n" || $0 == "\r" }) else {
            throw .body(
                "it printed more than one line: print the token alone on one line, or JSON (an ExecCredential, or access_token with expires_in)"
            )
        }
        return try Self.issued(trimmed, where: "output", lifetime: nil, expiresAt: nil)
    }

    private static func parseJSON(_ bytes: [UInt8]) throws(TokenEngineError) -> IssuedTokens {
        guard let document = JSONValue.parse(bytes), case .object = document else {
            throw .body("its output starts with { but is not a JSON object")
        }
        if let status = document["status"], case .object = status {
            // client.authentication.k8s.io ExecCredential (v1, v1beta1).
            guard let token = status["token"]?.stringValue else {
                throw .body("its ExecCredential has no status.token (client certificates are not bearer tokens)")
            }
            var expiresAt: Date?
            if let stamp = status["expirationTimestamp"], stamp != .null {
                guard let text = stamp.stringValue, let date = Timestamp.rfc3339(text) else {
                    throw .body("its status.expirationTimestamp is not an RFC 3339 time")
                }
                expiresAt = date
            }
            return try Self.issued(token, where: "status.token", lifetime: nil, expiresAt: expiresAt)
        }
        guard let token = document["access_token"]?.stringValue else {
            throw .body("its JSON has neither status.token (an ExecCredential) nor access_token")
        }
        var lifetime: Duration?
        do {
            lifetime = try OAuth2TokenResponse.seconds(document["expires_in"], name: "expires_in").map {
                Duration.seconds($0)
            }
        } catch {
            throw .body("its expires_in is not a number of seconds")
        }
        var expiresAt: Date?
        if let value = document["expires_at"], value != .null {
            do {
                expiresAt = try JSONSource.date(value, pointer: "expires_at")
            } catch {
                throw .body("its expires_at is not RFC 3339 or a number")
            }
        }
        return try Self.issued(token, where: "access_token", lifetime: lifetime, expiresAt: expiresAt)
    }

    private static func issued(
        _ token: String,
        where place: String,
        lifetime: Duration?,
        expiresAt: Date?
    ) throws(TokenEngineError) -> IssuedTokens {
        guard !token.isEmpty else { throw .body("its \(place) is empty") }
        // `jq -r .access_token` prints `null` for an error answer, and exits 0.
        guard token.count >= 8, token.lowercased() != "undefined" else {
            throw .body(
                "its \(place) is too short to be a token (under 8 characters, such as null from jq -r on an error answer)"
            )
        }
        guard BearerToken.isValidTokenValue(token) else {
            throw .body("its \(place) has characters a bearer token may not have (RFC 6750)")
        }
        return IssuedTokens(
            accessToken: BearerToken(token),
            refreshToken: nil,
            lifetime: lifetime,
            expiresAt: expiresAt
        )
    }
}
