import BearerdAuth

extension OAuth2Source {
    /// The client as the config's `auth` section describes it, with what start-up made of it:
    /// the secret read from its file, the assertion signer, and two settings from elsewhere.
    package struct Settings: Sendable {
        /// `auth.token_url` or `auth.issuer`, the client and its grants, as configured.
        package var client: OAuth2Client
        /// The content of `auth.client_secret_file` as it was at start (or a secret given in
        /// code).
        package var clientSecret: Secret?
        /// `auth.client_secret_file`: read again before each request that sends the secret,
        /// so a replaced secret needs no restart; ``clientSecret`` is used when it is `nil`.
        package var clientSecretFile: SecretFile?
        /// Whether discovered endpoints may be plain http to another machine (`allow_insecure_http`).
        package var allowInsecureHTTP: Bool
        /// Signs the assertion of ``ClientAuthentication/privateKeyJWT``.
        package var assertionSigner: (any ClientAssertionSigner)?
        /// `auth.dpop`: the tokens issued must be DPoP-bound (the transport sends the proofs).
        package var dpop: Bool
        /// The clock a platform token's `exp` is judged by (the engine's).
        package var clock: any TokenClock

        package init(
            client: OAuth2Client,
            clientSecret: Secret? = nil,
            clientSecretFile: SecretFile? = nil,
            allowInsecureHTTP: Bool = false,
            assertionSigner: (any ClientAssertionSigner)? = nil,
            dpop: Bool = false,
            clock: any TokenClock = SystemTokenClock()
        ) {
            self.client = client
            self.clientSecret = clientSecret
            self.clientSecretFile = clientSecretFile
            self.allowInsecureHTTP = allowInsecureHTTP
            self.assertionSigner = assertionSigner
            self.dpop = dpop
            self.clock = clock
        }

        /// A client built in code (tests, the fuzz target) rather than from a config.
        package init(
            endpoint: Endpoint,
            clientID: String,
            clientSecret: Secret? = nil,
            clientAuthentication: ClientAuthentication = .clientSecretBasic,
            scopes: [String] = [],
            extraParameters: [(String, String)] = [],
            clientCredentials: Bool = false,
            revocationURL: String? = nil,
            deviceAuthorizationURL: String? = nil,
            allowInsecureHTTP: Bool = false,
            assertionSigner: (any ClientAssertionSigner)? = nil,
            assertionAudience: ClientAssertionAudience = .endpoint,
            dpop: Bool = false,
            clock: any TokenClock = SystemTokenClock()
        ) {
            var tokenURL: String?
            var issuer: String?
            var resource: String?
            switch endpoint {
            case .tokenURL(let url): tokenURL = url
            case .issuer(let url): issuer = url
            case .resource(let url): resource = url
            }
            let audience: String =
                switch assertionAudience {
                case .endpoint: "endpoint"
                case .issuer: "issuer"
                case .fixed(let value): value
                }
            var client = OAuth2Client(clientID: clientID, tokenURL: tokenURL, issuer: issuer)
            client.clientAuthentication = clientAuthentication
            client.clientAssertionAudience = audience
            client.scopes = scopes
            client.extraParameters = extraParameters.map { .init(name: $0.0, value: $0.1) }
            client.clientCredentials = clientCredentials
            client.revocationURL = revocationURL
            client.deviceAuthorizationURL = deviceAuthorizationURL
            client.discover = resource != nil
            client.resourceURL = resource
            self.init(
                client: client,
                clientSecret: clientSecret,
                allowInsecureHTTP: allowInsecureHTTP,
                assertionSigner: assertionSigner,
                dpop: dpop,
                clock: clock
            )
        }

        /// Where tokens are asked for: `auth.token_url`, or discovered from `auth.issuer`.
        var endpoint: Endpoint {
            if let url = self.client.tokenURL { return .tokenURL(url) }
            if self.client.discover, let resource = self.client.resourceURL { return .resource(resource) }
            return .issuer(self.client.issuer ?? "")
        }

        /// `auth.client_assertion_audience`, checked by the config.
        var assertionAudience: ClientAssertionAudience {
            switch self.client.clientAssertionAudience {
            case "endpoint": .endpoint
            case "issuer": .issuer
            case let text: .fixed(text)
            }
        }
    }
}
