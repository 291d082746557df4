import BearerdAuth

/// The keys of `bearerd login` in a browser: the authorization code grant with PKCE
/// (RFC 6749 §4.1, RFC 7636) and a loopback redirect (RFC 8252 §7.3).
package struct AuthorizationSettings: Sendable, Equatable {
    /// `auth.authorization_url`; `nil`: the issuer's `authorization_endpoint`.
    package var url: String?
    /// `auth.redirect_port`; 0: any free port, which RFC 8252 §7.3 lets a server accept.
    package var redirectPort: Int
    /// `auth.login_timeout`: how long the CLI waits for the browser.
    package var timeout: Duration
    /// `auth.resource` (RFC 8707): sent with the authorization and every token request.
    package var resources: [String]
    /// `auth.authorization_params`: fields added to the authorization URL only.
    package var parameters: [NameValue]

    /// Every key at its default.
    package init() {
        self.url = nil
        self.redirectPort = 0
        self.timeout = .seconds(300)
        self.resources = []
        self.parameters = []
    }
}
