import BearerdAuth

/// `auth.json.*`: a custom JSON token API.
package struct JSONSourceSettings: Sendable, Equatable {
    package var loginURL: String?
    package var refreshURL: String
    package var contentType: String
    package var headers: [NameValue]
    package var loginBody: String
    package var refreshBody: String
    package var accessTokenPointer: String
    package var refreshTokenPointer: String?
    package var expiresInPointer: String?
    package var expiresAtPointer: String?
    /// `auth.json.logout_url` and its body template, for `bearerd logout`.
    package var logoutURL: String?
    package var logoutBody: String

    /// A JSON API's settings; what is left out takes the default its key declares
    /// (`JSONSourceDefaultsTests` holds the two together), and the logout body the refresh
    /// body.
    package init(
        loginURL: String? = nil,
        refreshURL: String,
        contentType: String = "application/json",
        headers: [NameValue] = [],
        loginBody: String = #"{"email":"{{username}}","password":"{{password}}"}"#,
        refreshBody: String = #"{"refreshToken":"{{refresh_token}}"}"#,
        accessTokenPointer: String = "/session/token",
        refreshTokenPointer: String? = "/session/refreshToken",
        expiresInPointer: String? = nil,
        expiresAtPointer: String? = "/session/expiresAt",
        logoutURL: String? = nil,
        logoutBody: String? = nil
    ) {
        self.loginURL = loginURL
        self.refreshURL = refreshURL
        self.contentType = contentType
        self.headers = headers
        self.loginBody = loginBody
        self.refreshBody = refreshBody
        self.accessTokenPointer = accessTokenPointer
        self.refreshTokenPointer = refreshTokenPointer
        self.expiresInPointer = expiresInPointer
        self.expiresAtPointer = expiresAtPointer
        self.logoutURL = logoutURL
        self.logoutBody = logoutBody ?? refreshBody
    }
}
