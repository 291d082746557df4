import BearerdAuth

extension BearerdConfiguration {
    /// `auth.*`: where the token comes from, and the token engine's timing.
    package struct Auth: Sendable {
        /// Which kind of token source the keys describe.
        package enum Source: Sendable {
            /// `auth.static_token_file`, resolved to an absolute path.
            case staticFile(String)
            case oauth2(OAuth2)
            case json(JSON)
        }

        /// `auth.token_url` / `auth.issuer` and the client.
        package struct OAuth2: Sendable {
            package var tokenURL: String?
            package var issuer: String?
            package var clientID: String
            /// `auth.client_secret_file`, resolved.
            package var clientSecretFile: String?
            /// `auth.client_auth`.
            package var clientAuthentication: ClientAuthentication
            /// `auth.client_key_file`, resolved: the PEM private key that signs `private_key_jwt`
            /// assertions.
            package var clientKeyFile: String?
            /// `auth.client_key_id`: the `kid` the token server knows the key by.
            package var clientKeyID: String?
            /// `auth.client_assertion_alg`: `RS256`, `PS256` or `ES256` (by default RS256 for an
            /// RSA key, ES256 for an EC key).
            package var clientAssertionAlgorithm: String?
            /// `auth.client_assertion_audience`: `endpoint` (the default: the URL each request
            /// goes to), `issuer`, or a fixed URL.
            package var clientAssertionAudience: String
            package var scopes: [String]
            /// `auth.extra_params` as name/value pairs.
            package var extraParameters: [Pair]
            /// `auth.client_credentials`: the client itself may get a token.
            package var clientCredentials: Bool
            /// `auth.revocation_url`: RFC 7009 endpoint for `bearerd logout` (else discovered).
            package var revocationURL: String?
            /// `auth.device_authorization_url`: RFC 8628 endpoint for `bearerd login --device`
            /// (else discovered).
            package var deviceAuthorizationURL: String?

            package init(
                tokenURL: String?,
                issuer: String?,
                clientID: String,
                clientSecretFile: String? = nil,
                clientAuthentication: ClientAuthentication,
                clientKeyFile: String? = nil,
                clientKeyID: String? = nil,
                clientAssertionAlgorithm: String? = nil,
                clientAssertionAudience: String,
                scopes: [String],
                extraParameters: [Pair],
                clientCredentials: Bool,
                revocationURL: String?,
                deviceAuthorizationURL: String?
            ) {
                self.tokenURL = tokenURL
                self.issuer = issuer
                self.clientID = clientID
                self.clientSecretFile = clientSecretFile
                self.clientAuthentication = clientAuthentication
                self.clientKeyFile = clientKeyFile
                self.clientKeyID = clientKeyID
                self.clientAssertionAlgorithm = clientAssertionAlgorithm
                self.clientAssertionAudience = clientAssertionAudience
                self.scopes = scopes
                self.extraParameters = extraParameters
                self.clientCredentials = clientCredentials
                self.revocationURL = revocationURL
                self.deviceAuthorizationURL = deviceAuthorizationURL
            }
        }

        /// `auth.json.*`: a custom JSON token API.
        package struct JSON: Sendable {
            package var loginURL: String?
            package var refreshURL: String
            package var contentType: String
            package var headers: [Pair]
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
            /// (``ConfigKeys/Auth/JSON``), and the logout body the refresh body.
            package init(
                loginURL: String? = nil,
                refreshURL: String,
                contentType: String = ConfigKeys.Auth.JSON.contentType.defaultText ?? "",
                headers: [Pair] = [],
                loginBody: String = ConfigKeys.Auth.JSON.loginBody.defaultText ?? "",
                refreshBody: String = ConfigKeys.Auth.JSON.refreshBody.defaultText ?? "",
                accessTokenPointer: String = ConfigKeys.Auth.JSON.accessToken.defaultText ?? "",
                refreshTokenPointer: String? = ConfigKeys.Auth.JSON.refreshToken.defaultPointer,
                expiresInPointer: String? = ConfigKeys.Auth.JSON.expiresIn.defaultPointer,
                expiresAtPointer: String? = ConfigKeys.Auth.JSON.expiresAt.defaultPointer,
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

        /// `auth.verify.*`: how an access token is checked before it is used.
        package struct Verify: Sendable, Equatable {
            /// Where the issuer's signing keys are.
            package enum Keys: Sendable, Equatable {
                /// `auth.verify.jwks_uri`: a URL.
                case jwks(String)
                /// `auth.verify.jwks_uri: discover`: the `jwks_uri` of auth.issuer's metadata.
                case discovered
                /// `auth.verify.secret_file`, resolved: an HS256 secret.
                case secret(String)
            }

            package var keys: Keys
            /// `auth.verify.issuer`: the `iss` required (default `auth.issuer`).
            package var issuer: String?
            /// `auth.verify.audience`: a value `aud` must hold.
            package var audience: String?

            package init(keys: Keys, issuer: String?, audience: String?) {
                self.keys = keys
                self.issuer = issuer
                self.audience = audience
            }
        }

        /// A name and a value (`audience=https://api`, `X-Amz-Target: …`).
        package struct Pair: Sendable, Equatable {
            package var name: String
            package var value: String

            package init(name: String, value: String) {
                self.name = name
                self.value = value
            }
        }

        /// `allow_insecure_http` (top level): plain http to another machine is allowed for the
        /// token URLs and the endpoints discovery finds.
        package var allowInsecureHTTP: Bool
        package var source: Source
        /// `auth.refresh_token_file`: seeds an empty store with a refresh token.
        package var refreshTokenFile: String?
        /// `auth.ca_file`: PEM bundle trusted for the token endpoint.
        package var caFile: String?
        /// `auth.tls_cert_file` and `auth.tls_key_file`, resolved: the client certificate (and its
        /// key) presented to the token endpoint (RFC 8705); re-read when the files change.
        package var tlsClientCertificate: ClientCertificateFiles?
        /// `auth.verify.*`: access tokens checked before use; `nil` when not configured.
        package var verify: Verify?
        /// `auth.dpop`: access tokens bound to a key bearerd holds (RFC 9449), each request
        /// sent with a proof of it.
        package var dpop: Bool
        /// `auth.request_timeout`: each whole token request, its body included.
        package var requestTimeout: Duration
        /// `auth.connect_timeout`: connecting to the token endpoint (no retries).
        package var connectTimeout: Duration
        package var leeway: Duration
        package var refreshMargin: Duration
        package var defaultLifetime: Duration
        package var maxRefreshesPerMinute: Int

        /// The static token file, when that is the source.
        package var staticTokenFile: String? {
            if case .staticFile(let path) = self.source { return path }
            return nil
        }
    }
}
