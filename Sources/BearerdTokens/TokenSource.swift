import BearerdAuth
import Foundation

/// Knows one token API: builds its requests and reads its successful answers. Errors are
/// classified the same way for every source (``TokenResponseClassifier``).
package protocol TokenSource: Sendable {
    /// The grant that gets a token without a user, if the source has one.
    var clientGrant: ClientGrant? { get }

    /// Whether a person's session (a login, a refresh token) can be had from this source;
    /// `false` for `auth.command`, whose program is the only way to a token.
    var hasUserSessions: Bool { get }

    /// Exchanges a refresh token for new tokens.
    func refreshRequest(_ refreshToken: Secret, transport: any TokenTransport) async throws -> TokenHTTPRequest

    /// Gets a client token (only with a ``clientGrant``): client_credentials, or an RFC 8693
    /// token exchange of the platform's token.
    func clientCredentialsRequest(transport: any TokenTransport) async throws -> TokenHTTPRequest

    /// The client grant, asking for `addingScopes` beyond the configured ones (a step-up).
    func clientCredentialsRequest(
        transport: any TokenTransport,
        addingScopes: [String]
    ) async throws
        -> TokenHTTPRequest

    /// What the next login asks for beyond the configured scopes: the scopes the session has
    /// (`granted`, every login) and what the API asked for (`asked`, `acrValues`, `maxAge`: only
    /// logins whose consent the person sees at the server, the browser's and the device's).
    func askAtLogin(granted: [String], asked: [String], acrValues: [String], maxAge: Int?)

    /// Reads a 2xx answer to the client grant.
    func parseClientGrant(_ body: [UInt8]) throws -> IssuedTokens

    /// A fingerprint of the platform's files the client grant sends (a subject token, a client
    /// assertion): when it changes after a refusal, the platform renewed them and the grant is
    /// tried again at once. `nil` when the grant reads no such file.
    func clientGrantInputs() -> Int?

    /// What a person reads when the token server refused the client grant with `code` (its
    /// `error`, or `HTTP <status>`), naming the keys to check.
    func clientGrantRefusal(code: String) -> String

    /// Where the client's token comes from, for `status`; `nil` for client_credentials.
    func clientGrantStatus(now: Date) -> ClientGrantStatus?

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

    /// Where a browser logs in (`bearerd login`): configured or discovered.
    /// - Throws: ``TokenEngineError`` `source` when there is none, naming the key to set.
    func authorizationServer(transport: any TokenTransport) async throws -> AuthorizationServer

    /// The URL the browser opens: RFC 6749 §4.1.1 with RFC 7636's S256 challenge.
    func authorizationURL(
        _ server: AuthorizationServer,
        state: String,
        challenge: String,
        redirectURI: String
    ) -> String

    /// Redeems an authorization code with its PKCE verifier (RFC 6749 §4.1.3, RFC 7636 §4.5).
    func authorizationCodeRequest(
        code: Secret,
        verifier: Secret,
        redirectURI: String,
        transport: any TokenTransport
    ) async throws -> TokenHTTPRequest

    /// How long the daemon keeps a browser login open (`auth.login_timeout`).
    var authorizationTimeout: Duration { get }

    /// `auth.discover` without `auth.client_id`: registers a client (RFC 7591) unless one is;
    /// returns a new registration for the store, `nil` when none was made.
    func registerIfNeeded(transport: any TokenTransport) async throws -> ClientRegistration?

    /// Takes the registration the store kept; `false` when it is not for this config.
    func adopt(_ registration: ClientRegistration?) -> Bool

    /// The client registered and in use.
    var registration: ClientRegistration? { get }

    /// What `auth.discover` found, for `status`; `nil` without it.
    var discovered: TokenStatus.Discovered? { get }

    /// `auth.scopes`.
    var configuredScopes: [String] { get }

    /// Drops a client bearerd registered, which the token server no longer knows; `false` when
    /// there is none.
    func forgetRegistration() -> Bool

    /// `auth.discover` with `auth.client_id`: the issuer found, as the pin the store keeps;
    /// `nil` otherwise, or before it is found.
    var issuerPin: ClientRegistration? { get }
}

extension TokenSource {
    package var revocationKey: String { "auth.revocation_url" }

    package var hasUserSessions: Bool { true }

    /// Whether a token can be had without a user.
    package var hasClientGrant: Bool { self.clientGrant != nil }

    /// The client grant's name, for logs, metrics and `status`; never compared.
    package var clientGrantName: String { self.clientGrant?.rawValue ?? "client_credentials" }

    package func parseClientGrant(_ body: [UInt8]) throws -> IssuedTokens { try self.parseIssued(body) }

    package func clientGrantInputs() -> Int? { nil }

    package func clientGrantRefusal(code: String) -> String {
        "the token server rejected the client credentials (\(code)): check \(self.credentialKeys)"
    }

    package func clientGrantStatus(now: Date) -> ClientGrantStatus? { nil }

    package var credentialKeys: String { "auth.client_id, auth.client_secret_file and auth.client_auth" }

    package func parseLogin(_ body: [UInt8]) throws -> IssuedTokens { try self.parseIssued(body) }

    package func authorizationServer(transport: any TokenTransport) async throws -> AuthorizationServer {
        throw TokenEngineError.source(
            "this token source has no browser login (it needs an OAuth 2.0 auth.issuer or auth.authorization_url): log in with a user name and password"
        )
    }

    package func authorizationURL(
        _ server: AuthorizationServer,
        state: String,
        challenge: String,
        redirectURI: String
    ) -> String { server.endpoint }

    package func authorizationCodeRequest(
        code: Secret,
        verifier: Secret,
        redirectURI: String,
        transport: any TokenTransport
    ) async throws -> TokenHTTPRequest {
        _ = try await self.authorizationServer(transport: transport)
        throw TokenEngineError.source("this token source has no browser login")
    }

    package var authorizationTimeout: Duration { .seconds(300) }

    package func clientCredentialsRequest(
        transport: any TokenTransport,
        addingScopes: [String]
    ) async throws -> TokenHTTPRequest {
        try await self.clientCredentialsRequest(transport: transport)
    }

    package func askAtLogin(granted: [String], asked: [String], acrValues: [String], maxAge: Int?) {}

    package func registerIfNeeded(transport: any TokenTransport) async throws -> ClientRegistration? { nil }

    package func adopt(_ registration: ClientRegistration?) -> Bool { false }

    package var registration: ClientRegistration? { nil }

    package var discovered: TokenStatus.Discovered? { nil }

    package var configuredScopes: [String] { [] }

    package func forgetRegistration() -> Bool { false }

    package var issuerPin: ClientRegistration? { nil }
}

/// Where a client token comes from, for `status`: the source, and the platform token it is
/// exchanged from (its `exp` and `sub`, never its value).
package struct ClientGrantStatus: Sendable, Codable, Equatable {
    /// `token_exchange`.
    package var source: String
    package var subjectTokenFile: String?
    package var subjectTokenExpiresAt: Date?
    package var subjectTokenSubject: String?
    /// `auth.command`'s program (`argv[0]`), and how its last run went.
    package var command: String?
    package var commandRanAt: Date?
    package var commandEnded: String?
    package var commandStderr: String?

    package init(source: String, subjectTokenFile: String?, subjectTokenExpiresAt: Date?, subjectTokenSubject: String?)
    {
        self.source = source
        self.subjectTokenFile = subjectTokenFile
        self.subjectTokenExpiresAt = subjectTokenExpiresAt
        self.subjectTokenSubject = subjectTokenSubject
    }

    enum CodingKeys: String, CodingKey {
        case source
        case subjectTokenFile = "subject_token_file"
        case subjectTokenExpiresAt = "subject_token_expires_at"
        case subjectTokenSubject = "subject_token_sub"
        case command
        case commandRanAt = "command_ran_at"
        case commandEnded = "command_ended"
        case commandStderr = "command_stderr"
    }
}
