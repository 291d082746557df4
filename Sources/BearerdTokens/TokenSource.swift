import BearerdAuth

/// Knows one token API: builds its requests and reads its successful answers. Errors are
/// classified the same way for every source (``TokenResponseClassifier``).
package protocol TokenSource: Sendable {
    /// Whether a token can be had without a user (OAuth2 `client_credentials`).
    var hasClientGrant: Bool { get }

    /// Exchanges a refresh token for new tokens.
    func refreshRequest(_ refreshToken: Secret, transport: any TokenTransport) async throws -> TokenHTTPRequest

    /// Gets a client token (only when ``hasClientGrant``).
    func clientCredentialsRequest(transport: any TokenTransport) async throws -> TokenHTTPRequest

    /// Logs a user in with a name and password (`bearerd login`).
    func passwordRequest(
        username: String,
        password: Secret,
        transport: any TokenTransport
    ) async throws
        -> TokenHTTPRequest

    /// Reads a 2xx answer.
    func parseIssued(_ body: [UInt8]) throws -> IssuedTokens

    /// Reads a 2xx answer to a password login, which must hold everything a session needs
    /// (a refresh token, unless the source says it issues none).
    func parseLogin(_ body: [UInt8]) throws -> IssuedTokens

    /// Revokes a session at the server (`bearerd logout`): RFC 7009 or the API's own logout.
    /// `nil` when no such endpoint is configured or discovered.
    func revocationRequest(
        refreshToken: Secret?,
        accessToken: BearerToken?,
        transport: any TokenTransport
    ) async throws -> TokenHTTPRequest?

    /// The config key that names where a session is revoked, for messages.
    var revocationKey: String { get }

    /// The config keys that hold the client's credentials, for a message about `invalid_client`.
    var credentialKeys: String { get }

    /// Starts an RFC 8628 device authorization (`bearerd login --device`).
    func deviceAuthorizationRequest(transport: any TokenTransport) async throws -> TokenHTTPRequest

    /// Polls the token endpoint for a device authorization's tokens.
    func deviceTokenRequest(deviceCode: Secret, transport: any TokenTransport) async throws -> TokenHTTPRequest
}

extension TokenSource {
    package var revocationKey: String { "auth.revocation_url" }

    package var credentialKeys: String { "auth.client_id, auth.client_secret_file and auth.client_auth" }

    package func parseLogin(_ body: [UInt8]) throws -> IssuedTokens { try self.parseIssued(body) }
}
