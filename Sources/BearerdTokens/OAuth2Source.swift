import Foundation
import Synchronization

/// A standard OAuth 2.0 token endpoint (RFC 6749): refresh_token, client_credentials and
/// password grants; client authentication by HTTP Basic, form fields, or none (public client).
public final class OAuth2Source: TokenSource {
    public enum Endpoint: Sendable, Equatable {
        case tokenURL(String)
        /// Found by discovery (OpenID Connect Discovery or RFC 8414) on first use.
        case issuer(String)
    }

    public enum ClientAuthentication: String, Sendable, CaseIterable {
        case clientSecretBasic = "client_secret_basic"
        case clientSecretPost = "client_secret_post"
        case none
    }

    public struct Settings: Sendable {
        public var endpoint: Endpoint
        public var clientID: String
        public var clientSecret: Secret?
        public var clientAuthentication: ClientAuthentication
        public var scopes: [String]
        /// Extra form fields sent with every grant (`audience`, `resource`).
        public var extraParameters: [(String, String)]
        /// Whether the client itself may get a token (client_credentials).
        public var clientCredentials: Bool

        public init(
            endpoint: Endpoint,
            clientID: String,
            clientSecret: Secret? = nil,
            clientAuthentication: ClientAuthentication = .clientSecretBasic,
            scopes: [String] = [],
            extraParameters: [(String, String)] = [],
            clientCredentials: Bool = false
        ) {
            self.endpoint = endpoint
            self.clientID = clientID
            self.clientSecret = clientSecret
            self.clientAuthentication = clientAuthentication
            self.scopes = scopes
            self.extraParameters = extraParameters
            self.clientCredentials = clientCredentials
        }
    }

    private let settings: Settings
    private let discovered = Mutex<String?>(nil)

    public init(settings: Settings) {
        self.settings = settings
    }

    public var hasClientGrant: Bool { self.settings.clientCredentials }

    public func refreshRequest(_ refreshToken: Secret, transport: any TokenTransport) async throws -> TokenHTTPRequest {
        try await self.request([("grant_type", "refresh_token"), ("refresh_token", refreshToken.value)], transport)
    }

    public func clientCredentialsRequest(transport: any TokenTransport) async throws -> TokenHTTPRequest {
        try await self.request([("grant_type", "client_credentials")], transport)
    }

    public func passwordRequest(
        username: String,
        password: Secret,
        transport: any TokenTransport
    ) async throws
        -> TokenHTTPRequest
    {
        try await self.request(
            [("grant_type", "password"), ("username", username), ("password", password.value)],
            transport
        )
    }

    public func parseIssued(_ body: [UInt8]) throws -> IssuedTokens {
        try OAuth2TokenResponse.parse(body)
    }

    private func request(
        _ grant: [(String, String)],
        _ transport: any TokenTransport
    ) async throws
        -> TokenHTTPRequest
    {
        var fields = grant
        if !self.settings.scopes.isEmpty { fields.append(("scope", self.settings.scopes.joined(separator: " "))) }
        fields += self.settings.extraParameters
        var headers = [
            ("content-type", "application/x-www-form-urlencoded"),
            ("accept", "application/json"),
        ]
        switch self.settings.clientAuthentication {
        case .clientSecretBasic:
            // RFC 6749 §2.3.1: both parts form-encoded before base64.
            let pair =
                FormEncoding.escape(self.settings.clientID) + ":"
                + FormEncoding.escape(self.settings.clientSecret?.value ?? "")
            headers.append(("authorization", "Basic " + Data(pair.utf8).base64EncodedString()))
        case .clientSecretPost:
            fields.append(("client_id", self.settings.clientID))
            fields.append(("client_secret", self.settings.clientSecret?.value ?? ""))
        case .none:
            fields.append(("client_id", self.settings.clientID))
        }
        return TokenHTTPRequest(
            url: try await self.tokenURL(transport),
            headers: headers,
            body: FormEncoding.encode(fields)
        )
    }

    /// The token endpoint, discovered once when only the issuer is configured.
    func tokenURL(_ transport: any TokenTransport) async throws -> String {
        switch self.settings.endpoint {
        case .tokenURL(let url):
            return url
        case .issuer(let issuer):
            if let url = self.discovered.withLock({ $0 }) { return url }
            let url = try await Discovery.tokenEndpoint(issuer: issuer, transport: transport)
            self.discovered.withLock { $0 = url }
            return url
        }
    }
}
