extension ConfigKeyDescriptor {
    /// A JSON pointer key's default: `nil` for `none` or `-` (the answer holds no such value).
    package var defaultPointer: String? {
        guard let text = self.defaultText, text != "-", text.lowercased() != "none" else { return nil }
        return text
    }
}

extension ConfigKeys.Auth {
    /// `auth.json.*`: a custom JSON token API instead of OAuth 2.0.
    package enum JSON {
        package static let loginURL = ConfigKeyDescriptor.text(
            "auth.json.login_url",
            "an https URL",
            reload: .newSession,
            sample: .set("https://app.example.com/api/auth/sign-in-email"),
            doc: ""
        )
        package static let refreshURL = ConfigKeyDescriptor.text(
            "auth.json.refresh_url",
            "an https URL",
            reload: .newSession,
            sample: .set("https://app.example.com/api/auth/refresh"),
            doc: ""
        )
        package static let contentType = ConfigKeyDescriptor.text(
            "auth.json.content_type",
            "a media type",
            default: "application/json",
            reload: .restart,
            doc: "e.g. application/x-amz-json-1.1"
        )
        package static let headers = ConfigKeyDescriptor.list(
            "auth.json.headers",
            "\"Name: value\" header lines",
            reload: .restart,
            secret: true,
            doc: #"e.g. ["X-Amz-Target: AWSCognitoIdentityProviderService.InitiateAuth"]"#
        )
        package static let loginBody = ConfigKeyDescriptor.text(
            "auth.json.login_body",
            "a template with {{password}}",
            default: #"{"email":"{{username}}","password":"{{password}}"}"#,
            reload: .restart,
            doc: ""
        )
        package static let refreshBody = ConfigKeyDescriptor.text(
            "auth.json.refresh_body",
            "a template with {{refresh_token}}",
            default: #"{"refreshToken":"{{refresh_token}}"}"#,
            reload: .restart,
            doc: ""
        )
        package static let accessToken = ConfigKeyDescriptor.text(
            "auth.json.access_token",
            "a JSON pointer",
            default: "/session/token",
            reload: .restart,
            doc: ""
        )
        package static let refreshToken = ConfigKeyDescriptor.text(
            "auth.json.refresh_token",
            "a JSON pointer, or none",
            default: "/session/refreshToken",
            reload: .restart,
            doc: "or none"
        )
        package static let expiresIn = ConfigKeyDescriptor.text(
            "auth.json.expires_in",
            "a JSON pointer, or none",
            default: "none",
            reload: .restart,
            doc: "seconds from the response, e.g. /expires_in"
        )
        package static let expiresAt = ConfigKeyDescriptor.text(
            "auth.json.expires_at",
            "a JSON pointer, or none",
            default: "/session/expiresAt",
            reload: .restart,
            doc: "RFC 3339, or seconds (or milliseconds) since 1970"
        )
        package static let logoutURL = ConfigKeyDescriptor.text(
            "auth.json.logout_url",
            "an https URL",
            reload: .restart,
            sample: .set("https://app.example.com/api/auth/sign-out"),
            doc: "for `bearerd logout`; none by default"
        )
        package static let logoutBody = ConfigKeyDescriptor.text(
            "auth.json.logout_body",
            "a template with {{refresh_token}} or {{access_token}}",
            reload: .restart,
            sample: .set(#"'{"refreshToken":"{{refresh_token}}"}'"#),
            doc: "{{refresh_token}}, {{access_token}}; by default the refresh body"
        )

        package static let section = ConfigSection(
            "auth.json",
            doc: """
                For APIs like Better Auth's: POST /api/auth/sign-in-email {"email","password"} ->
                {"session":{"token","refreshToken","expiresAt"}} and POST /api/auth/refresh {"refreshToken"}.
                Bodies are templates: {{username}}, {{password}} and {{refresh_token}} are replaced by the
                values, JSON-escaped (the template has the quotes). Tokens and expiry are found in the answer
                by JSON pointers (RFC 6901); "none" (or "-") means "not in the answer". A sign-in answer
                without a refresh token where refresh_token points is refused, naming the keys it has; set
                refresh_token: none for an API that issues none (status then says when to log in again).
                """,
            commented: true,
            [
                .key(loginURL), .key(refreshURL), .key(contentType), .key(headers), .key(loginBody),
                .key(refreshBody), .key(accessToken), .key(refreshToken), .key(expiresIn), .key(expiresAt),
                .key(logoutURL), .key(logoutBody),
            ]
        )
    }
}
