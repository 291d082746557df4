import BearerdAuth
import Foundation
import Synchronization

/// A standard OAuth 2.0 token endpoint (RFC 6749): refresh_token, client_credentials, password
/// and device code (RFC 8628) grants, and revocation (RFC 7009); client authentication by HTTP
/// Basic, form fields, a signed assertion (`private_key_jwt`), a client certificate
/// (`tls_client_auth`, presented by the transport), or none (public client).
package final class OAuth2Source: TokenSource {
    package enum Endpoint: Sendable, Equatable {
        case tokenURL(String)
        /// Found by discovery (OpenID Connect Discovery or RFC 8414) on first use.
        case issuer(String)
        /// `auth.discover`: the issuer is found from this API's metadata (RFC 9728), and the
        /// client may be one bearerd registered (RFC 7591).
        case resource(String)
    }

    /// `auth.client_auth` (``BearerdAuth/ClientAuthentication``).
    package typealias ClientAuthentication = BearerdAuth.ClientAuthentication

    let settings: Settings
    private let serverMetadata = Mutex<ServerMetadata?>(nil)
    /// With ``Endpoint/resource(_:)``: the issuer found, where, and the client registered there.
    let found = Mutex<(issuer: String?, document: String?, registration: ClientRegistration?)>((nil, nil, nil))
    /// What the next login asks for beyond `auth.scopes` (``askAtLogin(granted:asked:acrValues:maxAge:)``).
    let loginAsks = Mutex<(granted: [String], asked: [String], acrValues: [String], maxAge: Int?)>(([], [], [], nil))

    package init(settings: Settings) {
        self.settings = settings
    }

    package var clientGrant: ClientGrant? {
        guard self.settings.client.hasClientGrant else { return nil }
        return self.settings.client.tokenExchange == nil ? .clientCredentials : .tokenExchange
    }

    package var credentialKeys: String {
        let client = self.settings.client
        switch client.clientAuthentication {
        case .clientSecretBasic, .clientSecretPost:
            return "auth.client_id, auth.client_secret_file and auth.client_auth"
        case .privateKeyJWT where client.clientAssertionFile != nil:
            return "auth.client_id and auth.client_auth (private_key_jwt): the token server must trust the platform"
                + " that issued the token in auth.client_assertion_file for this client"
        case .privateKeyJWT:
            let keyID = client.clientKeyID == nil ? "" : " (under auth.client_key_id)"
            return "auth.client_id and auth.client_auth (private_key_jwt): the token server must hold the public key"
                + " of auth.client_key_file\(keyID)"
        case .tlsClientAuth:
            return "auth.client_id and auth.client_auth (tls_client_auth): the token server must have registered"
                + " the certificate of auth.tls_cert_file (with auth.tls_key_file)"
        case .none:
            return "auth.client_id and auth.client_auth (none: this client sends no secret)"
        }
    }

    package func refreshRequest(_ refreshToken: Secret, transport: any TokenTransport) async throws -> TokenHTTPRequest
    {
        try await self.request([("grant_type", "refresh_token"), ("refresh_token", refreshToken.value)], transport)
    }

    package func clientCredentialsRequest(transport: any TokenTransport) async throws -> TokenHTTPRequest {
        try await self.clientCredentialsRequest(transport: transport, addingScopes: [])
    }

    package func clientCredentialsRequest(
        transport: any TokenTransport,
        addingScopes: [String]
    ) async throws -> TokenHTTPRequest {
        let scopes = ScopeRequests.union(self.settings.client.scopes, addingScopes)
        guard let exchange = self.settings.client.tokenExchange else {
            return try await self.request(
                try await self.tokenURL(transport),
                [("grant_type", "client_credentials")],
                withScope: true,
                scopes: scopes
            )
        }
        return try await self.request(
            try await self.tokenURL(transport),
            try self.exchangeFields(exchange),
            withScope: true,
            scopes: scopes
        )
    }

    package func askAtLogin(granted: [String], asked: [String], acrValues: [String], maxAge: Int?) {
        self.loginAsks.withLock { $0 = (granted, asked, acrValues, maxAge) }
    }

    /// The scopes a login asks for: `auth.scopes`, those the session has, and (`withAsked`: a
    /// login whose consent the person sees) what the API asked for. `auth.scopes` alone when
    /// nothing was added, so that an empty list leaves the server's default.
    func loginScopes(withAsked: Bool) -> [String] {
        let asks = self.loginAsks.withLock { $0 }
        let added = withAsked ? asks.asked : []
        guard !added.isEmpty else { return self.settings.client.scopes }
        return ScopeRequests.union(self.settings.client.scopes, asks.granted, added)
    }

    package func parseClientGrant(_ body: [UInt8]) throws -> IssuedTokens {
        try OAuth2TokenResponse.parse(
            body,
            dpop: self.settings.dpop,
            exchange: self.settings.client.tokenExchange != nil,
            requestedTokenType: self.settings.client.tokenExchange?.requestedTokenType
        )
    }

    package func passwordRequest(
        username: String,
        password: Secret,
        transport: any TokenTransport
    ) async throws
        -> TokenHTTPRequest
    {
        if case .resource = self.settings.endpoint {
            throw TokenEngineError.source(
                "with auth.discover the API names the token server, and a password goes only to one the config names: log in in a browser, or set auth.issuer"
            )
        }
        return try await self.request(
            try await self.tokenURL(transport),
            [("grant_type", "password"), ("username", username), ("password", password.value)],
            withScope: true,
            scopes: self.loginScopes(withAsked: false)
        )
    }

    package func parseIssued(_ body: [UInt8]) throws -> IssuedTokens {
        try OAuth2TokenResponse.parse(body, dpop: self.settings.dpop)
    }

    package func revocationRequest(
        refreshToken: Secret?,
        accessToken: BearerToken?,
        transport: any TokenTransport
    ) async throws -> TokenHTTPRequest? {
        // RFC 7009 §2.1: revoking the refresh token revokes the access tokens issued with it.
        let fields: [(String, String)]
        if let refreshToken {
            fields = [("token", refreshToken.value), ("token_type_hint", "refresh_token")]
        } else if let accessToken {
            fields = [("token", accessToken.value), ("token_type_hint", "access_token")]
        } else {
            return nil
        }
        var url = self.settings.client.revocationURL
        if url == nil, let issuer = try await self.issuer(transport) {
            url = try await self.metadata(issuer, transport).revocationEndpoint
        }
        guard let url else { return nil }
        return try await self.request(url, fields, withScope: false)
    }

    package func deviceAuthorizationRequest(transport: any TokenTransport) async throws -> TokenHTTPRequest {
        var url = self.settings.client.deviceAuthorizationURL
        if url == nil, let issuer = try await self.issuer(transport) {
            url = try await self.metadata(issuer, transport).deviceAuthorizationEndpoint
        }
        guard let url else {
            throw TokenEngineError.source(
                "the token server names no device authorization endpoint: set auth.device_authorization_url, or log in with a user name and password"
            )
        }
        return try await self.request(url, [], withScope: true, scopes: self.loginScopes(withAsked: true))
    }

    package func deviceTokenRequest(deviceCode: Secret, transport: any TokenTransport) async throws -> TokenHTTPRequest
    {
        try await self.request(
            [("grant_type", "urn:ietf:params:oauth:grant-type:device_code"), ("device_code", deviceCode.value)],
            transport
        )
    }

    private func request(
        _ grant: [(String, String)],
        _ transport: any TokenTransport
    ) async throws
        -> TokenHTTPRequest
    {
        try await self.request(try await self.tokenURL(transport), grant, withScope: true)
    }

    /// A form POST to `url` with the client's authentication; `scopes`: what to ask for instead
    /// of `auth.scopes`.
    func request(
        _ url: String,
        _ grant: [(String, String)],
        withScope: Bool,
        scopes: [String]? = nil
    ) async throws -> TokenHTTPRequest {
        var fields = grant
        let scopes = scopes ?? self.settings.client.scopes
        if withScope, !scopes.isEmpty {
            fields.append(("scope", scopes.joined(separator: " ")))
        }
        // RFC 8707: where the tokens are for, unless the grant names it (a token exchange).
        if withScope, !fields.contains(where: { $0.0 == "resource" }) {
            fields += self.resources.map { ("resource", $0) }
        }
        fields += self.settings.client.extraParameters.map { ($0.name, $0.value) }
        var headers = [
            ("content-type", "application/x-www-form-urlencoded"),
            ("accept", "application/json"),
        ]
        let client = self.client
        switch client.authentication {
        case .clientSecretBasic:
            // RFC 6749 §2.3.1: both parts form-encoded before base64.
            let secret = try self.secretToSend(client)
            let pair = FormEncoding.escape(client.id) + ":" + FormEncoding.escape(secret?.value ?? "")
            headers.append(("authorization", "Basic " + Data(pair.utf8).base64EncodedString()))
        case .clientSecretPost:
            fields.append(("client_id", client.id))
            fields.append(("client_secret", try self.secretToSend(client)?.value ?? ""))
        case .privateKeyJWT:
            guard let signer = self.settings.assertionSigner else {
                throw TokenEngineError.source("auth.client_auth: private_key_jwt needs auth.client_key_file")
            }
            let assertion = try await signer.assertion(
                clientID: self.settings.client.clientID,
                audience: try self.audience(for: url)
            )
            fields.append(("client_id", self.settings.client.clientID))
            fields.append(("client_assertion_type", "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"))
            fields.append(("client_assertion", assertion.value))
        case .tlsClientAuth, .none:
            fields.append(("client_id", client.id))
        }
        return TokenHTTPRequest(url: url, headers: headers, body: FormEncoding.encode(fields))
    }

    /// The secret a request sends: a registered client's own, else `auth.client_secret_file`
    /// as it is now, else the one given at start.
    func secretToSend(
        _ client: (id: String, secret: Secret?, authentication: ClientAuthentication)
    ) throws(TokenEngineError) -> Secret? {
        if self.found.withLock({ $0.registration }) == nil, let file = self.settings.clientSecretFile {
            return try file.read()
        }
        return client.secret
    }

    /// The issuer's JWKS, as its metadata names it (`auth.verify.jwks_uri: discover`).
    package func discoveredJWKSURI(transport: any TokenTransport) async throws -> String {
        guard let issuer = try await self.issuer(transport) else {
            throw TokenEngineError.source("auth.verify.jwks_uri: discover needs auth.issuer")
        }
        guard let url = try await self.metadata(issuer, transport).jwksURI else {
            throw TokenEngineError.source(
                "the metadata of auth.issuer \(issuer) names no jwks_uri: set auth.verify.jwks_uri to the JWKS URL"
            )
        }
        return url
    }

    /// The `aud` of an assertion sent to `url`.
    private func audience(for url: String) throws -> String {
        switch self.settings.assertionAudience {
        case .endpoint:
            return url
        case .fixed(let audience):
            return audience
        case .issuer:
            guard let issuer = self.knownIssuer else {
                throw TokenEngineError.source("auth.client_assertion_audience: issuer needs auth.issuer")
            }
            return issuer
        }
    }

    /// What discovery found, for `check-config`: each endpoint, its URL and the document that
    /// named it; empty when the token endpoint is configured rather than discovered.
    /// - Throws: ``TokenEngineError``: code `source` for a configuration problem, `unreachable`
    ///   when the issuer could not be asked.
    package func discoveredEndpoints(
        transport: any TokenTransport
    ) async throws -> [(
        endpoint: String, url: String, document: String
    )] {
        guard let issuer = try await self.issuer(transport) else { return [] }
        let metadata = try await self.metadata(issuer, transport)
        let urls = [
            "token_endpoint": metadata.tokenEndpoint, "revocation_endpoint": metadata.revocationEndpoint,
            "device_authorization_endpoint": metadata.deviceAuthorizationEndpoint, "jwks_uri": metadata.jwksURI,
            "authorization_endpoint": metadata.authorizationEndpoint,
            "registration_endpoint": metadata.registrationEndpoint,
        ]
        var found: [(endpoint: String, url: String, document: String)] = []
        if let document = self.found.withLock({ $0.document }) {
            found.append(("authorization_server (RFC 9728)", issuer, document))
        }
        return found
            + metadata.sources.keys.sorted().compactMap { name in
                guard let url = urls[name] ?? nil, let document = metadata.sources[name] else { return nil }
                return (name, url, document)
            }
    }

    /// The token endpoint, discovered once when only the issuer is configured.
    func tokenURL(_ transport: any TokenTransport) async throws -> String {
        switch self.settings.endpoint {
        case .tokenURL(let url): url
        case .issuer, .resource:
            try await self.metadata(try await self.issuer(transport) ?? "", transport).tokenEndpoint
        }
    }

    /// The issuer's metadata, discovered once.
    func metadata(_ issuer: String, _ transport: any TokenTransport) async throws -> ServerMetadata {
        if let metadata = self.serverMetadata.withLock({ $0 }) { return metadata }
        let metadata = try await Discovery.metadata(
            issuer: issuer,
            allowInsecureHTTP: self.settings.allowInsecureHTTP,
            transport: transport
        )
        self.serverMetadata.withLock { $0 = metadata }
        return metadata
    }
}
