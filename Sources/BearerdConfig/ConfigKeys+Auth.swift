import BearerdAuth

extension ConfigKeys {
    /// `auth.*`: where the token comes from and how the token engine treats it.
    package enum Auth {
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
        static let refreshTokenFile = ConfigKeyDescriptor.text(
            "auth.refresh_token_file",
            "a file of mode 0600",
            reload: .restart,
            sample: .commented("/etc/bearerd/refresh-token"),
            doc: """
                A file holding a refresh token, used only to seed a token store that does not exist yet (for
                example right after installation); the newest refresh token the server returns is kept from
                then on, and a refresh token is never sent twice. After a logout the seed is spent. Without a
                store key, tokens live in memory only: a restart starts again from this file, whose token a
                server that rotates refresh tokens has already replaced. `bearerd login
                --refresh-token-stdin` is the better way to bring a refresh token in.
                """
        )
        static let staticTokenFile = ConfigKeyDescriptor.text(
            "auth.static_token_file",
            "a file of mode 0600",
            reload: .newSession,
            sample: .commented("/etc/bearerd/token"),
            doc: """
                A file holding the bearer token alone (surrounding white space is ignored). When the upstream
                answers 401, bearerd reads the file again, so replacing the file fixes a revoked token without
                a restart. Nothing is refreshed.
                """
        )
        static let dpop = ConfigKeyDescriptor.bool(
            "auth.dpop",
            default: false,
            reload: .restart,
            sample: .commented("false"),
            doc: """
                RFC 9449: bearerd makes an EC P-256 key, keeps it sealed in the store with the tokens, and
                sends a proof of it with every token request and every upstream request (as
                `Authorization: DPoP <token>`), following the servers' DPoP-Nonce. The token server must
                issue DPoP tokens to this client. OAuth 2.0 token servers only; a restart applies a change.
                """
        )

        static let section = ConfigSection(
            "auth",
            [
                .note(
                    """
                    Where the token comes from: exactly one of an OAuth 2.0 token endpoint (token_url or
                    issuer), a custom JSON API (json.refresh_url) or a static token file (static_token_file).
                    """
                ),
                .heading("OAuth 2.0 (RFC 6749)"),
                .key(tokenURL), .key(issuer), .key(clientID), .key(clientSecretFile), .key(clientAuth),
                .key(clientKeyFile), .key(clientKeyID), .key(clientAssertionAlg), .key(clientAssertionAudience),
                .key(scopes), .key(extraParams), .key(clientCredentials), .key(revocationURL),
                .key(deviceAuthorizationURL), .key(refreshTokenFile),
                .heading("A custom JSON token API (instead of token_url/issuer)"),
                .section(JSON.section),
                .heading("A static token (instead of the above)"),
                .key(staticTokenFile),
                .heading("Verified access tokens (off by default)"),
                .section(Verify.section),
                .heading("DPoP-bound tokens (off by default)"),
                .key(dpop),
                .heading("The token engine"),
                .key(Engine.caFile), .key(Engine.tlsCertFile), .key(Engine.tlsKeyFile), .key(Engine.requestTimeout),
                .key(Engine.connectTimeout), .key(Engine.leeway), .key(Engine.refreshMargin),
                .key(Engine.defaultLifetime), .key(Engine.maxRefreshesPerMinute),
            ]
        )
    }
}
