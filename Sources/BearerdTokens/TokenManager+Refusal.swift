extension TokenManager.Grant {
    /// What the token server refused when it answered a login (a password or an imported
    /// refresh token) with a 4xx, and what to check: `code` is the answer's `error`, or
    /// `HTTP <status>` when it names none. Only `invalid_grant` blames the user's credentials;
    /// any other refusal (`invalid_client`, a bare 401 or 403) may be the client's own
    /// authentication, so it names the keys that configure it (`credentialKeys`, no values).
    func refusal(code: String, credentialKeys: String) -> String {
        let grantRefused = code == "invalid_grant"
        if code == "invalid_client" || code == "unauthorized_client" {
            return "this client (\(code)): check \(credentialKeys)"
        }
        switch self {
        case .password:
            return grantRefused
                ? "the login (\(code)): check the user name and password"
                : "the login (\(code)): check \(credentialKeys); then the user name and password"
        case .authorizationCode:
            return grantRefused
                ? "the authorization code (\(code)): it expired, was used already, or the client's redirect URI or PKCE does not match; run `bearerd login` again"
                : "the authorization code (\(code)): check \(credentialKeys)"
        case .importedRefreshToken, .refreshToken, .clientCredentials:
            return grantRefused
                ? "this refresh token (\(code)): it is expired, revoked or for another client"
                : "this refresh token (\(code)): check \(credentialKeys); or the token is expired, revoked"
                    + " or for another client"
        }
    }
}
