import BearerdAuth
import BearerdFiles
import BearerdTokens
import Configuration
import Foundation

extension BearerdConfiguration.Auth {
    /// `auth.token_url` / `auth.issuer` and the client: ``OAuth2Client``, owned by the token
    /// engine.
    package typealias OAuth2 = OAuth2Client
}

extension OAuth2Client {
    /// Reads and checks the client's `auth.*` keys.
    init(reading builder: inout ConfigBuilder) {
        typealias Keys = ConfigKeys.Auth
        self.init(clientID: "")
        let tokenURL = builder.string(Keys.tokenURL)
        let issuer = builder.string(Keys.issuer)
        if tokenURL != nil && issuer != nil {
            builder.issue("auth.issuer", "set auth.token_url or auth.issuer, not both")
        }
        let revocationURL = builder.string(Keys.revocationURL)
        let deviceURL = builder.string(Keys.deviceAuthorizationURL)
        for (key, value) in [
            ("auth.token_url", tokenURL), ("auth.issuer", issuer), ("auth.revocation_url", revocationURL),
            ("auth.device_authorization_url", deviceURL),
        ] {
            if let value { builder.checkHTTPURL(value, key: key) }
        }
        let discover = builder.bool(Keys.discover)
        if discover && (tokenURL != nil || issuer != nil) {
            builder.issue(
                "auth.discover",
                "finds the token server from the API (RFC 9728): leave out auth.token_url and auth.issuer, or set auth.discover: false"
            )
        }
        let clientID = builder.string(Keys.clientID)
        if clientID == nil && !discover {
            builder.issue(
                "auth.client_id",
                "required with auth.token_url or auth.issuer (with auth.discover: true, a client is registered when it is not set)"
            )
        }
        let secretFile = builder.string(Keys.clientSecretFile).map(builder.resolve)
        if let secretFile, let problem = builder.secretFileProblem(path: secretFile) {
            builder.issue("auth.client_secret_file", problem)
        }
        // Without a value, the secret decides: Basic with one, none without.
        let written = builder.isSet(Keys.clientAuth) ? builder.choice(Keys.clientAuth) : nil
        let parsed =
            builder.isSet(Keys.clientAuth)
            ? written.flatMap(ClientAuthentication.init(rawValue:))
            : (secretFile == nil ? ClientAuthentication.none : .clientSecretBasic)
        let authentication = parsed ?? .clientSecretBasic
        if parsed == nil {
            // choice() has said what the key accepts.
        } else if authentication.sendsSecret && secretFile == nil {
            builder.issue("auth.client_secret_file", "required with auth.client_auth: \(authentication.rawValue)")
        } else if authentication == .tlsClientAuth && builder.string(Keys.Engine.tlsCertFile) == nil {
            builder.issue(
                "auth.tls_cert_file",
                "required with auth.client_auth: tls_client_auth (the client certificate, PEM)"
            )
        }
        let assertion = builder.clientAssertion(authentication: parsed, issuer: issuer)
        self.tokenURL = tokenURL
        self.issuer = issuer
        self.clientID = clientID ?? ""
        self.clientSecretFile = secretFile
        self.clientAuthentication = authentication
        self.clientKeyFile = assertion.keyFile
        self.clientKeyID = assertion.keyID
        self.clientAssertionAlgorithm = assertion.algorithm
        self.clientAssertionAudience = assertion.audience
        self.clientAssertionFile = assertion.assertionFile
        self.scopes = builder.list(Keys.scopes)
        self.extraParameters = builder.pairs(
            Keys.extraParams,
            separator: "=",
            example: "audience=https://api.example"
        )
        self.clientCredentials = builder.bool(Keys.clientCredentials)
        self.revocationURL = revocationURL
        self.deviceAuthorizationURL = deviceURL
        self.authorization = AuthorizationSettings(reading: &builder)
        self.discover = discover
        if discover && (secretFile != nil || authentication != .none) {
            // The API names the token server: a secret or a key goes only to one the config names.
            builder.issue(
                "auth.discover",
                "works with a public client only (no auth.client_secret_file, auth.client_auth: none): a credential goes only to a token server the config names, so set auth.issuer"
            )
        }
        let clientCredentials = self.clientCredentials
        self.tokenExchange = builder.section("token_exchange") {
            TokenExchangeSettings.reading(&$0, clientCredentials: clientCredentials)
        }
    }
}

extension ConfigKeys.Auth {
    static let tokenURL = ConfigKeyDescriptor.text(
        "auth.token_url",
        "an https URL",
        reload: .newSession,
        sample: .set("https://auth.example.com/oauth/token"),
        doc: """
            The token endpoint. Or give `issuer: https://auth.example.com` instead and bearerd finds the
            endpoint by discovery (/.well-known/openid-configuration, then RFC 8414's
            /.well-known/oauth-authorization-server) the first time it needs it. Redirects are never
            followed: give the final address.
            """
    )
    static let issuer = ConfigKeyDescriptor.text(
        "auth.issuer",
        "an https URL",
        reload: .newSession,
        sample: .commented("https://auth.example.com"),
        doc: ""
    )
    static let discover = ConfigKeyDescriptor.bool(
        "auth.discover",
        default: false,
        reload: .newSession,
        sample: .commented("false"),
        doc: """
            true, instead of token_url or issuer: `bearerd login` asks the API itself (upstream.url) for its
            protected-resource metadata (RFC 9728: its well-known document, or the resource_metadata of its
            401), takes the authorization server it names, reads that server's metadata, registers a public
            client there (RFC 7591) when client_id is not set, and logs in in a browser, sending `resource`
            (RFC 8707). The registration is kept in the store, sealed like the tokens. What was found is
            shown by `status` and `check-config`. Every URL found is held to the rules of issuer discovery.
            """
    )
    static let clientID = ConfigKeyDescriptor.text(
        "auth.client_id",
        "the client's id",
        reload: .newSession,
        sample: .set("bearerd"),
        doc: "The OAuth client bearerd is."
    )
    static let clientSecretFile = ConfigKeyDescriptor.text(
        "auth.client_secret_file",
        "a file of mode 0600",
        reload: .restart,
        sample: .set("/etc/bearerd/client-secret"),
        doc: """
            A file holding the client secret alone (mode 0600; a relative name is looked up in
            $CREDENTIALS_DIRECTORY under systemd). Leave it out for a public client.
            """
    )
    static let clientAuth = ConfigKeyDescriptor(
        "auth.client_auth",
        .choice(ClientAuthentication.allCases.map(\.rawValue)),
        reload: .restart,
        sample: .set("client_secret_basic"),
        doc: """
            How the client authenticates: client_secret_basic (HTTP Basic, the default with a secret),
            client_secret_post (client_id and client_secret as form fields), private_key_jwt (a JWT
            signed with client_key_file, one per request: RFC 7523, OpenID Connect Core §9),
            tls_client_auth (the client certificate tls_cert_file proves the client: RFC 8705) or none
            (default without a secret: only client_id is sent).
            """
    )
    static let clientKeyFile = ConfigKeyDescriptor.text(
        "auth.client_key_file",
        "a PEM file of mode 0600",
        reload: .restart,
        sample: .commented("/etc/bearerd/client.key"),
        doc: """
            private_key_jwt: the client's private key (PEM: RSA of 2048 bits or more, or EC P-256; mode
            0600, or a systemd credential), the `kid` the token server registered it under, the
            algorithm (RS256 or PS256 for RSA, ES256 for EC; by default RS256 and ES256), and the
            assertion's `aud`: endpoint (the URL each request goes to: the token endpoint for every
            grant), issuer (auth.issuer) or a fixed URL some servers ask for. Each assertion has a new
            jti and expires a minute after it is made.
            """
    )
    static let clientAssertionFile = ConfigKeyDescriptor.text(
        "auth.client_assertion_file",
        "a file of mode 0600 or 0640",
        reload: .restart,
        sample: .commented("/var/run/secrets/azure/tokens/azure-identity-token"),
        doc: """
            private_key_jwt without a key on the host (workload identity federation, as Entra ID, Google
            and AWS use it): a JWT the platform issued (a Kubernetes projected token, a CI job's OIDC
            token) is sent as the client_assertion, read again before each request. The token server
            must trust the platform's issuer for this client. Instead of client_key_file.
            """
    )
    static let clientKeyID = ConfigKeyDescriptor.text(
        "auth.client_key_id",
        "a key id",
        reload: .restart,
        sample: .commented("bearerd-2026"),
        doc: ""
    )
    static let clientAssertionAlg = ConfigKeyDescriptor.text(
        "auth.client_assertion_alg",
        "RS256, PS256 or ES256",
        reload: .restart,
        sample: .commented("RS256"),
        doc: ""
    )
    static let clientAssertionAudience = ConfigKeyDescriptor.text(
        "auth.client_assertion_audience",
        "endpoint, issuer or a URL",
        default: "endpoint",
        reload: .restart,
        sample: .commented("endpoint"),
        doc: ""
    )
    static let scopes = ConfigKeyDescriptor.list(
        "auth.scopes",
        "scope names",
        reload: .restart,
        doc: "Scopes to ask for (sent as one space-separated `scope`); none by default."
    )
    static let extraParams = ConfigKeyDescriptor.list(
        "auth.extra_params",
        "name=value pairs",
        reload: .restart,
        secret: true,
        doc: """
            Extra form fields sent with every token request, as name=value, e.g.
            ["audience=https://api.example.com", "resource=https://api.example.com"].
            """
    )
    static let clientCredentials = ConfigKeyDescriptor.bool(
        "auth.client_credentials",
        default: false,
        reload: .restart,
        doc: """
            true: the client itself may get a token (client_credentials grant). It is used when no user
            is logged in, and when the token server rejects the user's session. Default false.
            """
    )
    static let revocationURL = ConfigKeyDescriptor.text(
        "auth.revocation_url",
        "an https URL",
        reload: .restart,
        sample: .commented("https://auth.example.com/oauth/revoke"),
        doc: """
            `bearerd logout` revokes the session here (RFC 7009); with `issuer`, the discovered
            revocation_endpoint is used when this is not set. Without either, logout wipes the tokens
            here and says the server-side session stays valid until it expires.
            """
    )
    static let deviceAuthorizationURL = ConfigKeyDescriptor.text(
        "auth.device_authorization_url",
        "an https URL",
        reload: .restart,
        sample: .commented("https://auth.example.com/oauth/device/code"),
        doc: """
            `bearerd login --device` (RFC 8628, for hosts without a browser) starts here; with `issuer`,
            the discovered device_authorization_endpoint is used when this is not set.
            """
    )
}
