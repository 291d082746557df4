import BearerdAuth
import BearerdConfig

/// The settings a reload does not apply to a running daemon: the token source and the store
/// (the stored tokens were issued by one token server to one client; swapping either under a
/// running engine would send them where they mean nothing), and what is made once at start
/// (the event loops, the admin and metrics listeners, the shutdown's grace). A reload names
/// each that changed, so none is silently ignored.
enum RestartOnlyKeys {
    /// Keys whose change makes the stored tokens useless (another server, client or store):
    /// those `ConfigSchema` declares `.newSession`.
    static let session = Set(ConfigSchema.keys(reloading: .newSession))

    /// Each restart-only key's value, as text.
    static func values(_ configuration: BearerdConfiguration) -> [String: String] {
        let auth = configuration.auth
        var values: [String: String] = [
            "auth.refresh_token_file": auth.refreshTokenFile ?? "",
            "auth.ca_file": auth.caFile ?? "",
            // The files' contents are taken up when they change; their paths at a restart.
            "auth.tls_cert_file": auth.tlsClientCertificate?.certificateFile ?? "",
            "auth.tls_key_file": auth.tlsClientCertificate?.keyFile ?? "",
            "auth.verify.jwks_uri": auth.verify.map { verify in
                switch verify.keys {
                case .jwks(let url): url
                case .discovered: "discover"
                case .secret: ""
                }
            } ?? "",
            "auth.verify.secret_file": auth.verify.map { verify in
                if case .secret(let path) = verify.keys { path } else { "" }
            } ?? "",
            "auth.verify.issuer": auth.verify?.issuer ?? "",
            "auth.verify.audience": auth.verify?.audience ?? "",
            // The key and the proofs are set up once, with the token client.
            "auth.dpop": "\(auth.dpop)",
            "auth.request_timeout": "\(auth.requestTimeout)",
            "auth.connect_timeout": "\(auth.connectTimeout)",
            "store.path": configuration.store.path,
            "store.key_file": configuration.store.keyFile ?? "",
            "store.passphrase_file": configuration.store.passphraseFile ?? "",
            "store.profile": configuration.store.profile,
            "store.backend": configuration.store.postgres == nil ? "file" : "postgres",
            "admin.socket": configuration.admin.socket,
            // Made once at start: the event loops, the metrics listener, and the grace the
            // shutdown gives (ProxyServer keeps the configuration it started with).
            "threads": "\(configuration.threads)",
            "metrics.listen": configuration.admin.metricsListen.map { "\($0)" } ?? "",
            "shutdown_grace": "\(configuration.shutdownGrace)",
        ]
        if let postgres = configuration.store.postgres {
            // The pool is made once: a reload neither reconnects nor moves the session elsewhere.
            values["store.postgres.url_file"] = postgres.urlFile
            values["store.postgres.sslmode"] = postgres.tls?.rawValue ?? ""
            values["store.postgres.ca_file"] = postgres.caFile ?? ""
            values["store.postgres.table"] = postgres.table
            values["store.postgres.host_name"] = postgres.hostName
            values["store.postgres.lock_timeout"] = "\(postgres.lockTimeout)"
            values["store.postgres.poll_interval"] = "\(postgres.pollInterval)"
            values["store.postgres.connect_timeout"] = "\(postgres.connectTimeout)"
        }
        switch auth.source {
        case .staticFile(let path):
            values["auth.static_token_file"] = path
        case .oauth2(let oauth2):
            values["auth.token_url"] = oauth2.tokenURL ?? ""
            values["auth.issuer"] = oauth2.issuer ?? ""
            values["auth.client_id"] = oauth2.clientID
            values["auth.client_secret_file"] = oauth2.clientSecretFile ?? ""
            values["auth.client_auth"] = oauth2.clientAuthentication.rawValue
            values["auth.client_key_file"] = oauth2.clientKeyFile ?? ""
            values["auth.client_key_id"] = oauth2.clientKeyID ?? ""
            values["auth.client_assertion_alg"] = oauth2.clientAssertionAlgorithm ?? ""
            values["auth.client_assertion_audience"] = oauth2.clientAssertionAudience
            values["auth.scopes"] = oauth2.scopes.joined(separator: " ")
            values["auth.extra_params"] = oauth2.extraParameters.map { "\($0.name)=\($0.value)" }.joined(separator: "&")
            values["auth.client_credentials"] = "\(oauth2.clientCredentials)"
            values["auth.revocation_url"] = oauth2.revocationURL ?? ""
            values["auth.device_authorization_url"] = oauth2.deviceAuthorizationURL ?? ""
        case .json(let json):
            values["auth.json.refresh_url"] = json.refreshURL
            values["auth.json.login_url"] = json.loginURL ?? ""
            values["auth.json.logout_url"] = json.logoutURL ?? ""
            values["auth.json.content_type"] = json.contentType
            values["auth.json.headers"] = json.headers.map { "\($0.name):\($0.value)" }.joined(separator: "\n")
            values["auth.json.login_body"] = json.loginBody
            values["auth.json.refresh_body"] = json.refreshBody
            values["auth.json.logout_body"] = json.logoutBody
            values["auth.json.access_token"] = json.accessTokenPointer
            values["auth.json.refresh_token"] = json.refreshTokenPointer ?? ""
            values["auth.json.expires_in"] = json.expiresInPointer ?? ""
            values["auth.json.expires_at"] = json.expiresAtPointer ?? ""
        }
        return values
    }

    /// The restart-only keys whose values differ, sorted.
    static func changed(from old: BearerdConfiguration, to new: BearerdConfiguration) -> [String] {
        let before = Self.values(old)
        let after = Self.values(new)
        return Set(before.keys).union(after.keys).filter { before[$0] != after[$0] }.sorted()
    }
}
