import BearerdAuth

/// The OAuth 2.0 client as the config's `auth` section describes it: where tokens are asked for,
/// the client's credentials, and its grants. Read by BearerdConfig; used by ``OAuth2Source``.
package struct OAuth2Client: Sendable, Equatable {
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
    /// `auth.client_assertion_file`, resolved: a JWT the platform issued (workload identity
    /// federation), read before each request and sent as the `private_key_jwt` assertion.
    package var clientAssertionFile: String?
    /// `auth.client_assertion_audience`: `endpoint` (the default: the URL each request
    /// goes to), `issuer`, or a fixed URL.
    package var clientAssertionAudience: String
    package var scopes: [String]
    /// `auth.extra_params` as name/value pairs.
    package var extraParameters: [NameValue]
    /// `auth.client_credentials`: the client itself may get a token.
    package var clientCredentials: Bool
    /// `auth.revocation_url`: RFC 7009 endpoint for `bearerd logout` (else discovered).
    package var revocationURL: String?
    /// `auth.device_authorization_url`: RFC 8628 endpoint for `bearerd login --device`
    /// (else discovered).
    package var deviceAuthorizationURL: String?
    /// `auth.token_exchange.*`: the client's token comes from RFC 8693 token exchange.
    package var tokenExchange: TokenExchangeSettings?
    /// The browser login's keys (`auth.authorization_url`, `auth.resource`, ...).
    package var authorization = AuthorizationSettings()
    /// `auth.discover`: the authorization server is found from the API (RFC 9728), and a
    /// client registered (RFC 7591) when `auth.client_id` is not set.
    package var discover = false
    /// With `discover`: the API's URL (`upstream.url`), the resource whose metadata is read.
    package var resourceURL: String?

    /// Whether the client may get a token of its own: client_credentials or token exchange.
    package var hasClientGrant: Bool { self.clientCredentials || self.tokenExchange != nil }

    /// A client built in code (tests, the fuzz target): every other key at the default its
    /// config key declares (`OAuth2ClientDefaultsTests` holds the two together).
    package init(clientID: String, tokenURL: String? = nil, issuer: String? = nil) {
        self.tokenURL = tokenURL
        self.issuer = issuer
        self.clientID = clientID
        self.clientAuthentication = .none
        self.clientAssertionAudience = "endpoint"
        self.scopes = []
        self.extraParameters = []
        self.clientCredentials = false
    }
}
