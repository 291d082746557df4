extension BearerdConfiguration {
    /// `auth.*`: where the token comes from, and the token engine's timing.
    public struct Auth: Sendable {
        /// Which kind of token source the keys describe.
        public enum Source: Sendable {
            /// `auth.static_token_file`, resolved to an absolute path.
            case staticFile(String)
            case oauth2(OAuth2)
            case json(JSON)
        }

        /// `auth.token_url` / `auth.issuer` and the client.
        public struct OAuth2: Sendable {
            public var tokenURL: String?
            public var issuer: String?
            public var clientID: String
            /// `auth.client_secret_file`, resolved.
            public var clientSecretFile: String?
            /// `client_secret_basic`, `client_secret_post` or `none`.
            public var clientAuthentication: String
            public var scopes: [String]
            /// `auth.extra_params` as name/value pairs.
            public var extraParameters: [Pair]
            /// `auth.client_credentials`: the client itself may get a token.
            public var clientCredentials: Bool
            /// `auth.revocation_url`: RFC 7009 endpoint for `bearerd logout` (else discovered).
            public var revocationURL: String?
            /// `auth.device_authorization_url`: RFC 8628 endpoint for `bearerd login --device`
            /// (else discovered).
            public var deviceAuthorizationURL: String?
        }

        /// `auth.json.*`: a custom JSON token API.
        public struct JSON: Sendable {
            public var loginURL: String?
            public var refreshURL: String
            public var contentType: String
            public var headers: [Pair]
            public var loginBody: String
            public var refreshBody: String
            public var accessTokenPointer: String
            public var refreshTokenPointer: String?
            public var expiresInPointer: String?
            public var expiresAtPointer: String?
            /// `auth.json.logout_url` and its body template, for `bearerd logout`.
            public var logoutURL: String?
            public var logoutBody: String
        }

        /// A name and a value (`audience=https://api`, `X-Amz-Target: …`).
        public struct Pair: Sendable, Equatable {
            public var name: String
            public var value: String

            public init(name: String, value: String) {
                self.name = name
                self.value = value
            }
        }

        /// `allow_insecure_http` (top level): plain http to another machine is allowed for the
        /// token URLs and the endpoints discovery finds.
        public var allowInsecureHTTP: Bool
        public var source: Source
        /// `auth.refresh_token_file`: seeds an empty store with a refresh token.
        public var refreshTokenFile: String?
        /// `auth.ca_file`: PEM bundle trusted for the token endpoint.
        public var caFile: String?
        /// `auth.request_timeout`: each whole token request, its body included.
        public var requestTimeout: Duration
        /// `auth.connect_timeout`: connecting to the token endpoint (no retries).
        public var connectTimeout: Duration
        public var leeway: Duration
        public var refreshMargin: Duration
        public var defaultLifetime: Duration
        public var maxRefreshesPerMinute: Int

        /// The static token file, when that is the source.
        public var staticTokenFile: String? {
            if case .staticFile(let path) = self.source { return path }
            return nil
        }
    }
}
