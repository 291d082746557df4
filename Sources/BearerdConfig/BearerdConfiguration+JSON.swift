import BearerdAuth
import BearerdTokens
import Foundation

extension BearerdConfiguration.Auth {
    /// `auth.json.*`: ``JSONSourceSettings``, owned by the token engine.
    package typealias JSON = JSONSourceSettings
}

extension JSONSourceSettings {
    /// Reads and checks every `auth.json.*` key.
    init(reading builder: inout ConfigBuilder) {
        typealias Keys = ConfigKeys.Auth.JSON
        let refreshURL = builder.string(Keys.refreshURL) ?? ""
        let loginURL = builder.string(Keys.loginURL)
        let logoutURL = builder.string(Keys.logoutURL)
        for (key, value) in [
            ("auth.json.refresh_url", refreshURL), ("auth.json.login_url", loginURL ?? "https://x"),
            ("auth.json.logout_url", logoutURL ?? "https://x"),
        ] {
            builder.checkHTTPURL(value, key: key)
        }
        let refreshBody = builder.string(Keys.refreshBody) ?? ""
        if !refreshBody.contains("{{refresh_token}}") {
            builder.issue("auth.json.refresh_body", "must contain {{refresh_token}}")
        }
        // Unset, it is the refresh body, whose own issue is reported above.
        let logoutBody = builder.string(Keys.logoutBody) ?? refreshBody
        if builder.string(Keys.logoutBody) != nil, !logoutBody.contains("{{refresh_token}}"),
            !logoutBody.contains("{{access_token}}")
        {
            builder.issue("auth.json.logout_body", "must contain {{refresh_token}} or {{access_token}}")
        }
        let loginBody = builder.string(Keys.loginBody) ?? ""
        if !loginBody.contains("{{password}}") {
            builder.issue("auth.json.login_body", "must contain {{password}}")
        }
        var pointers: [String: String?] = [:]
        for descriptor in [
            Keys.accessToken, Keys.refreshToken, Keys.expiresIn,
            Keys.expiresAt,
        ] {
            let key = descriptor.name
            let value = builder.string(descriptor)
            // `none` (or `-`): the API gives no such value (refresh_token: none declares a
            // session that ends with its token).
            let none = value == "-" || value?.lowercased() == "none"
            if let value, !none, !value.isEmpty, !value.hasPrefix("/") {
                builder.issue(key, "must be a JSON pointer like /session/token, or none (got \"\(value)\")")
            }
            if none && descriptor.name == Keys.accessToken.name {
                builder.issue(
                    key,
                    "must be a JSON pointer like /session/token: the answer must hold the access token"
                )
            }
            pointers[key] = none ? nil : value
        }
        self.init(
            loginURL: loginURL,
            refreshURL: refreshURL,
            contentType: builder.string(Keys.contentType) ?? "",
            headers: builder.pairs(
                Keys.headers,
                separator: ":",
                example: "X-Amz-Target: Service.Operation"
            ),
            loginBody: loginBody,
            refreshBody: refreshBody,
            accessTokenPointer: (pointers[Keys.accessToken.name] ?? nil) ?? "",
            refreshTokenPointer: pointers[Keys.refreshToken.name] ?? nil,
            expiresInPointer: pointers[Keys.expiresIn.name] ?? nil,
            expiresAtPointer: pointers[Keys.expiresAt.name] ?? nil,
            logoutURL: logoutURL,
            logoutBody: logoutBody
        )
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
