import BearerdAuth
import BearerdFiles
import Foundation

#if canImport(Glibc)
import Glibc
#endif

extension BearerdConfiguration {
    /// `auth.*`: where the token comes from, and the token engine's timing.
    package struct Auth: Sendable {
        /// Which kind of token source the keys describe.
        package enum Source: Sendable {
            /// `auth.static_token_file`, resolved to an absolute path.
            case staticFile(String)
            case oauth2(OAuth2)
            case json(JSON)
            /// `auth.command`: a program on the host prints the token.
            case command(Command)
        }

        /// A name and a value (`audience=https://api`, `X-Amz-Target: …`).
        package typealias Pair = NameValue

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
        /// `auth.scope_step_up*`.
        package var scopeStepUp: ScopeStepUp

        /// Reads and checks every `auth.*` key: which source, its keys, and the engine's.
        init(reading builder: inout ConfigBuilder) {
            typealias Keys = ConfigKeys.Auth
            let staticFile = builder.string(Keys.staticTokenFile)
            let oauth2 =
                builder.string(Keys.tokenURL) != nil || builder.string(Keys.issuer) != nil
                || builder.bool(Keys.discover)
            let json = builder.string(Keys.JSON.refreshURL) != nil
            let command = !builder.list(Keys.Command.command).isEmpty
            let source: Source
            switch (staticFile, oauth2, json || command) {
            case (let path?, false, false):
                let resolved = builder.resolve(path)
                if let problem = builder.secretFileProblem(path: resolved) {
                    builder.issue("auth.static_token_file", problem)
                }
                source = .staticFile(resolved)
            case (nil, true, false):
                source = .oauth2(OAuth2(reading: &builder))
            case (nil, false, true) where json && command:
                builder.issue(
                    "auth",
                    "names more than one token source: keep one of auth.command and auth.json.refresh_url"
                )
                source = .staticFile("")
            case (nil, false, true) where command:
                source = .command(Command(reading: &builder))
            case (nil, false, true):
                source = .json(builder.section("json") { JSON(reading: &$0) })
            case (nil, false, false):
                builder.issue(
                    "auth",
                    "required: a token source: auth.token_url, auth.issuer or auth.discover (OAuth 2.0), auth.json.refresh_url (a JSON API), auth.command (a program that prints it) or auth.static_token_file"
                )
                source = .staticFile("")
            default:
                builder.issue(
                    "auth",
                    "names more than one token source: keep one of auth.static_token_file, auth.token_url/auth.issuer, auth.json.refresh_url and auth.command"
                )
                source = .staticFile("")
            }
            if case .command = source {
            } else {
                typealias Command = ConfigKeys.Auth.Command
                for key in [Command.environment, Command.directory, Command.timeout]
                where builder.string(key.name) != nil || !builder.list(key).isEmpty {
                    builder.issue(key.name, "applies to auth.command only")
                }
            }
            if case .oauth2 = source {
            } else {
                for key in ["auth.token_exchange.subject_token_file", "auth.client_assertion_file"]
                where builder.string(key) != nil {
                    builder.issue(key, "applies to an OAuth 2.0 token server (auth.token_url or auth.issuer) only")
                }
            }
            var refreshTokenFile: String?
            if let path = builder.string(Keys.refreshTokenFile) {
                refreshTokenFile = builder.resolve(path)
                if let problem = builder.secretFileProblem(path: refreshTokenFile!) {
                    builder.issue("auth.refresh_token_file", problem)
                }
                if case .staticFile = source {
                    builder.issue("auth.refresh_token_file", "does not apply to a static token")
                }
                if case .command = source {
                    builder.issue("auth.refresh_token_file", "does not apply to auth.command: nothing is refreshed")
                }
            }
            let caFile = builder.string(Keys.Engine.caFile).map(builder.resolve)
            if let caFile, builder.unreadable(caFile) {
                builder.issue("auth.ca_file", "cannot read \(caFile): check that it exists and bearerd may read it")
            }
            let tlsClientCertificate = builder.clientCertificate(
                certificate: "auth.tls_cert_file",
                key: "auth.tls_key_file"
            )
            if case .command = source {
                for key in [
                    Keys.Engine.tlsCertFile, Keys.Engine.caFile, Keys.Engine.requestTimeout, Keys.Engine.connectTimeout,
                ] where builder.string(key.name) != nil {
                    builder.issue(
                        key.name,
                        "does not apply to auth.command: nothing is sent to a token server (auth.command_timeout bounds a run)"
                    )
                }
            }
            if tlsClientCertificate != nil, case .staticFile = source {
                builder.issue(
                    "auth.tls_cert_file",
                    "does not apply to a static token: nothing is sent to a token server"
                )
            }
            let verify = builder.section("verify") { Verify.reading(&$0, source: source) }
            let dpop = builder.bool(Keys.dpop)
            if dpop {
                switch source {
                case .oauth2: break
                case .staticFile:
                    builder.issue(
                        "auth.dpop",
                        "does not apply to a static token: a DPoP token is issued for bearerd's key"
                    )
                case .json, .command:
                    builder.issue(
                        "auth.dpop",
                        "applies to an OAuth 2.0 token server (auth.token_url or auth.issuer) only"
                    )
                }
            }
            self.allowInsecureHTTP = builder.allowInsecureHTTP
            self.source = source
            self.refreshTokenFile = refreshTokenFile
            self.caFile = caFile
            self.tlsClientCertificate = tlsClientCertificate
            self.verify = verify
            self.dpop = dpop
            self.requestTimeout = builder.duration(Keys.Engine.requestTimeout)
            self.connectTimeout = builder.duration(Keys.Engine.connectTimeout)
            self.leeway = builder.duration(Keys.Engine.leeway)
            self.refreshMargin = builder.duration(Keys.Engine.refreshMargin)
            self.defaultLifetime = builder.duration(Keys.Engine.defaultLifetime)
            self.maxRefreshesPerMinute = max(1, builder.count(Keys.Engine.maxRefreshesPerMinute))
            self.scopeStepUp = ScopeStepUp(reading: &builder, source: source)
        }

        /// The OAuth 2.0 client, when that is the source.
        package var oauth2: OAuth2? {
            if case .oauth2(let client) = self.source { return client }
            return nil
        }

        /// The static token file, when that is the source.
        package var staticTokenFile: String? {
            if case .staticFile(let path) = self.source { return path }
            return nil
        }
    }
}

extension ConfigKeys {
    /// `auth.*`: where the token comes from and how the token engine treats it.
    package enum Auth {
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
                    issuer), a custom JSON API (json.refresh_url), a program that prints it (command) or a
                    static token file (static_token_file).
                    """
                ),
                .heading("OAuth 2.0 (RFC 6749)"),
                .key(tokenURL), .key(issuer), .key(discover), .key(clientID), .key(clientSecretFile), .key(clientAuth),
                .key(clientKeyFile), .key(clientKeyID), .key(clientAssertionAlg), .key(clientAssertionAudience),
                .key(clientAssertionFile),
                .key(scopes), .key(extraParams), .key(clientCredentials), .key(revocationURL),
                .key(deviceAuthorizationURL), .key(refreshTokenFile),
                .heading("Logging in with a browser (the authorization code grant with PKCE)"),
                .key(Authorization.url), .key(Authorization.redirectPort), .key(Authorization.timeout),
                .key(Authorization.resource), .key(Authorization.parameters),
                .heading("Token exchange (RFC 8693): the platform's token for the API's (off by default)"),
                .section(TokenExchange.section),
                .heading("A custom JSON token API (instead of token_url/issuer)"),
                .section(JSON.section),
                .heading("A program that prints the token (instead of the above)"),
                .key(Command.command), .key(Command.environment), .key(Command.directory), .key(Command.timeout),
                .heading("A static token (instead of the above)"),
                .key(staticTokenFile),
                .heading("More scope when the API asks for it (RFC 6750 §3.1; off by default)"),
                .key(ScopeStepUp.enabled), .key(ScopeStepUp.allow),
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

extension ConfigKeys.Auth {
    /// `auth.*` keys of the token engine: its TLS, its timeouts and when it refreshes.
    package enum Engine {
        static let caFile = ConfigKeyDescriptor.text(
            "auth.ca_file",
            "a PEM file",
            reload: .restart,
            sample: .commented("/etc/bearerd/auth-ca.pem"),
            doc: "PEM bundle to trust for the token endpoint instead of the system's roots."
        )
        static let tlsCertFile = ConfigKeyDescriptor.text(
            "auth.tls_cert_file",
            "a PEM file",
            reload: .restart,
            sample: .commented("/etc/bearerd/client.pem"),
            doc: """
                A client certificate (chain, leaf first) and its key (mode 0600) presented to the token
                endpoint: required by client_auth: tls_client_auth, allowed with any client_auth (for
                certificate-bound tokens). The files are looked at before each token request: a renewed
                certificate is presented from the next request on, without a restart; a half-written pair
                (a key that is not the certificate's) keeps the previous one until both agree.
                """
        )
        static let tlsKeyFile = ConfigKeyDescriptor.text(
            "auth.tls_key_file",
            "a PEM file of mode 0600",
            reload: .restart,
            sample: .commented("/etc/bearerd/client-cert.key"),
            doc: ""
        )
        static let requestTimeout = ConfigKeyDescriptor.duration(
            "auth.request_timeout",
            default: "10s",
            within: .milliseconds(100)...(.seconds(300)),
            reload: .restart,
            doc: "Each request to the token endpoint must be answered within this long."
        )
        static let connectTimeout = ConfigKeyDescriptor.duration(
            "auth.connect_timeout",
            default: "2s",
            within: .milliseconds(10)...(.seconds(60)),
            reload: .restart,
            doc: """
                Connecting to the token endpoint, tried once: a refused or unreachable token server is
                noticed within this long, and the backoff retries.
                """
        )
        static let leeway = ConfigKeyDescriptor.duration(
            "auth.leeway",
            default: "30s",
            within: .zero...(.seconds(3600)),
            reload: .applies,
            doc: """
                A token this close to its expiry counts as expired (at most a quarter of its lifetime, so a
                short-lived token stays usable). Expiry is the earliest of the JWT `exp` claim (corrected for
                the token server's clock, from its Date header) and `expires_in`.
                """
        )
        static let refreshMargin = ConfigKeyDescriptor.duration(
            "auth.refresh_margin",
            default: "60s",
            within: .seconds(1)...(.seconds(86_400)),
            reload: .applies,
            doc: """
                The token is refreshed ahead of its expiry by this much at least, or by 10 % of its lifetime
                if that is more (never more than half of it), with +-10 % jitter: in steady state no request
                waits for a refresh.
                """
        )
        static let defaultLifetime = ConfigKeyDescriptor.duration(
            "auth.default_lifetime",
            default: "1h",
            within: .seconds(1)...(.seconds(30 * 86_400)),
            reload: .applies,
            doc: "The lifetime of a token whose response gives neither `exp` nor `expires_in`."
        )
        static let maxRefreshesPerMinute = ConfigKeyDescriptor(
            "auth.max_refreshes_per_minute",
            .count(1...Int.max),
            default: "30",
            reload: .applies,
            doc: """
                A refresh that fails with 5xx, 408, 429 (Retry-After is honoured), a timeout or a network
                error keeps every token: the current access token is used until it really expires, and the
                refresh is retried with exponential backoff (full jitter, 1s doubling to 5m); once the token
                has expired and requests wait for one, an attempt is made every 3s instead, so service is
                back within about 3s of the token server. Only a 4xx
                answer (invalid_grant, invalid_client, ...) wipes the stored tokens. On top of the backoff, at
                most this many refresh attempts are made in any minute, successful ones included: a token
                server that issues tokens living less than about 5s needs a higher limit.
                """
        )
    }
}
