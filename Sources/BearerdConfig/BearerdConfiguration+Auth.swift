import BearerdAuth

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
            /// `auth.client_auth`.
            public var clientAuthentication: ClientAuthentication
            /// `auth.client_key_file`, resolved: the PEM private key that signs `private_key_jwt`
            /// assertions.
            public var clientKeyFile: String?
            /// `auth.client_key_id`: the `kid` the token server knows the key by.
            public var clientKeyID: String?
            /// `auth.client_assertion_alg`: `RS256`, `PS256` or `ES256` (by default RS256 for an
            /// RSA key, ES256 for an EC key).
            public var clientAssertionAlgorithm: String?
            /// `auth.client_assertion_audience`: `endpoint` (the default: the URL each request
            /// goes to), `issuer`, or a fixed URL.
            public var clientAssertionAudience: String
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

        /// `auth.verify.*`: how an access token is checked before it is used.
        public struct Verify: Sendable, Equatable {
            /// Where the issuer's signing keys are.
            public enum Keys: Sendable, Equatable {
                /// `auth.verify.jwks_uri`: a URL.
                case jwks(String)
                /// `auth.verify.jwks_uri: discover`: the `jwks_uri` of auth.issuer's metadata.
                case discovered
                /// `auth.verify.secret_file`, resolved: an HS256 secret.
                case secret(String)
            }

            public var keys: Keys
            /// `auth.verify.issuer`: the `iss` required (default `auth.issuer`).
            public var issuer: String?
            /// `auth.verify.audience`: a value `aud` must hold.
            public var audience: String?

            public init(keys: Keys, issuer: String?, audience: String?) {
                self.keys = keys
                self.issuer = issuer
                self.audience = audience
            }
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
        /// `auth.tls_cert_file` and `auth.tls_key_file`, resolved: the client certificate (and its
        /// key) presented to the token endpoint (RFC 8705); re-read when the files change.
        public var tlsClientCertificate: ClientCertificateFiles?
        /// `auth.verify.*`: access tokens checked before use; `nil` when not configured.
        public var verify: Verify?
        /// `auth.dpop`: access tokens bound to a key bearerd holds (RFC 9449), each request
        /// sent with a proof of it.
        public var dpop: Bool
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
